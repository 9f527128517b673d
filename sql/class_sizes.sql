-- Equivalence classes of a relation over the given columns (NULLs group together): how many,
-- the smallest, the rows they hold, how many are smaller than :k, and how many rows are
-- :unplaced (for a release: rows without an equivalence class id). Independent of the
-- partitioning code: it reads only the published relation.
SELECT
  count(*) AS classes,
  min(n) AS smallest,
  sum(n) AS total,
  count(*) FILTER (WHERE n < :k) AS violating,
  sum(unplaced) AS unplaced
FROM (
  SELECT count(*) AS n, count(*) FILTER (WHERE :unplaced) AS unplaced
  FROM :source AS s
  GROUP BY :columns
) AS c
