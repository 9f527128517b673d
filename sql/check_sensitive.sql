-- Diversity of a categorical sensitive column within each equivalence class (the :columns),
-- NULL counting as a value: per class the number of distinct values, the entropy (nats) of
-- their frequencies, the largest count and the sum of the counts from the :l-th largest on.
-- Returns the worst class for each measure and how many classes break recursive (c,l).
SELECT
  count(*) AS classes,
  min(distinct_values) AS min_distinct,
  min(entropy) AS min_entropy,
  count(*) FILTER (WHERE NOT (top < :c * coalesce(tail, 0))) AS recursive_violations
FROM (
  SELECT
    max(r) AS distinct_values,
    ln(sum(n)) - sum(n * ln(n)) / sum(n) AS entropy,
    max(n) AS top,
    sum(n) FILTER (WHERE r >= :l) AS tail
  FROM (
    SELECT n, row_number() OVER (PARTITION BY :columns ORDER BY n DESC) AS r, :columns
    FROM (SELECT count(*) AS n, :columns FROM :source AS s GROUP BY :columns, :sensitive) AS v
  ) AS ranked
  GROUP BY :columns
) AS per_class
