-- Equivalence classes of a relation over the given columns (NULLs group together): how many,
-- the smallest, the rows they hold and how many are smaller than :k. Independent of the
-- partitioning code: it reads only the published relation.
SELECT
  count(*) AS classes,
  min(n) AS smallest,
  sum(n) AS total,
  count(*) FILTER (WHERE n < :k) AS violating
FROM (SELECT count(*) AS n FROM :source AS s GROUP BY :columns) AS c
