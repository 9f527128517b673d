-- The distribution of one column (:label: a class target or a sensitive column) within the
-- equivalence classes of a published view, for sqlanon.metrics. Groups are the :class values,
-- the suppressed rows (NULL :class) forming one more group; NULL labels are a label. Column
-- placeholders are qualified by the view's alias s.
--   total       rows
--   suppressed  rows with a NULL :class
--   minority    rows of a class whose label is not the class's majority label (n - top)
--   nh          sum over groups G of |G| * H(label in G), in nats: c * ln(n / c) per label,
--               exactly 0 for a pure group
--   l_distinct  smallest number of distinct labels in a class
--   l_entropy   smallest exp(H(label in E)) over classes (entropy l-diversity)
SELECT
  sum(n) AS total,
  coalesce(sum(n) FILTER (WHERE cls IS NULL), 0) AS suppressed,
  coalesce(sum(n - top) FILTER (WHERE cls IS NOT NULL), 0) AS minority,
  sum(nh) AS nh,
  min(labels) FILTER (WHERE cls IS NOT NULL) AS l_distinct,
  min(exp(nh / n)) FILTER (WHERE cls IS NOT NULL) AS l_entropy
FROM (
  SELECT cls, sum(c) AS n, max(c) AS top, count(*) AS labels,
         sum(c * ln(CAST(n_cls AS DOUBLE) / c)) AS nh
  FROM (
    SELECT cls, c, sum(c) OVER (PARTITION BY cls) AS n_cls
    FROM (
      SELECT count(*) AS c, :class AS cls, :label AS label
      FROM :view AS s
      GROUP BY :class, :label
    ) AS g
  ) AS w
  GROUP BY cls
) AS e
