-- Per equivalence class (the :columns): the number of distinct values of the :sensitive column
-- (NULL counting as one) and their entropy in nats.
SELECT count(*) AS distinct_values, ln(sum(n)) - sum(n * ln(n)) / sum(n) AS entropy
FROM (SELECT count(*) AS n, :columns FROM :source AS s GROUP BY :columns, :sensitive) AS v
GROUP BY :columns
