-- Per-class second moments of a numeric column of a published view, for sqlanon.metrics
-- (RMSE of the class-mean prediction, variance diversity). The column is first centred on its
-- global mean; var_pop is DuckDB's streaming (Welford-type) update, so no sum of squares of
-- large numbers is ever formed. Groups are the :class values, the suppressed rows (NULL
-- :class) forming one more group; NULL values are ignored. Column placeholders are qualified
-- by the alias s (of the view in each scope: the mean's subquery has its own).
--   n            non-NULL values
--   sse          sum over groups of the squared deviations from the group mean
--   min_variance smallest population variance of a class; a class whose values are all NULL
--                counts as 0 (it discloses one value, NULL), as in sql/check_variance.sql
SELECT
  coalesce(sum(n), 0) AS n,
  sum(m2) AS sse,
  min(coalesce(var, 0)) FILTER (WHERE cls IS NOT NULL) AS min_variance
FROM (
  SELECT count(d) AS n, var_pop(d) * count(d) AS m2, var_pop(d) AS var, cls
  FROM (
    SELECT CAST(:value AS DOUBLE) - m.mu AS d, :class AS cls
    FROM :view AS s
    CROSS JOIN (SELECT avg(CAST(:value AS DOUBLE)) AS mu FROM :view AS s) AS m
  ) AS x
  GROUP BY cls
) AS g
