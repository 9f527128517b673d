-- Equivalence classes of a relation over the given columns (NULLs group together), in one read
-- of the relation: how many classes, the smallest, the rows they hold, how many are smaller than
-- :k, how many rows are :unplaced (for a relation that is not a release: rows without an
-- equivalence class id), and for a release its :suppressed rows (class id NULL: no class) and
-- how many of those are :leaked (a published value other than the fully generalized one, from
-- the one-row :root). Independent of the partitioning code: it reads only the published
-- relation (and, for :root, the release's rules).
--
-- :source is the relation's rows (:rows = count(*)), or for a release its classes, one row per
-- class id with the class's rows and each column's value (:rows = sum of the class rows): rows
-- with identical values group the same either way, as long as every class holds one value per
-- column. :mixed counts the classes that do not (0 for rows); the caller then reads the rows.
SELECT
  count(*) FILTER (WHERE NOT c.sup) AS classes,
  min(c.n) FILTER (WHERE NOT c.sup) AS smallest,
  sum(c.n) FILTER (WHERE NOT c.sup) AS total,
  count(*) FILTER (WHERE NOT c.sup AND c.n < :k) AS violating,
  sum(c.unplaced) AS unplaced,
  sum(c.n) FILTER (WHERE c.sup) AS suppressed,
  sum(c.n) FILTER (WHERE c.sup AND :leaked) AS leaked,
  count(*) FILTER (WHERE c.mixed > 0) AS mixed
FROM (
  SELECT 1 AS one, :rows AS n, :unplaced_rows AS unplaced, :mixed AS mixed, :suppressed AS sup, :grouped
  FROM :source AS s
  GROUP BY :columns
) AS c
CROSS JOIN :root AS z
