-- Equivalence classes of a published view, for sqlanon.metrics: one group per :class value,
-- the rows whose :class is NULL (suppressed: they fall in no region) forming one more group.
-- total rows, suppressed rows, classes, the smallest class, and the sum of squared class sizes
-- (the discernibility metric's class term). Reads only the published view. Column
-- placeholders are qualified by the view's alias s, so no column name can bind to an alias.
SELECT
  sum(n) AS total,
  coalesce(sum(n) FILTER (WHERE suppressed), 0) AS suppressed,
  count(*) FILTER (WHERE NOT suppressed) AS classes,
  min(n) FILTER (WHERE NOT suppressed) AS smallest,
  coalesce(sum(CAST(n AS DECIMAL(38, 0)) * n) FILTER (WHERE NOT suppressed), 0) AS squares
FROM (
  SELECT count(*) AS n, :class IS NULL AS suppressed
  FROM :view AS s
  GROUP BY :class
) AS c
