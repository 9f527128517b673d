-- Variance of a numeric sensitive column within each equivalence class (the :columns), NULLs
-- left out: the smallest class variance and how many classes fall below :v.
SELECT
  count(*) AS classes,
  min(variance) AS min_variance,
  count(*) FILTER (WHERE coalesce(variance, 0) < :v) AS violations
FROM (
  SELECT var_pop(CAST(:sensitive AS DOUBLE)) AS variance FROM :source AS s GROUP BY :columns
) AS per_class
