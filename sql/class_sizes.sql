-- Equivalence classes of a relation over the given columns (NULLs group together), in one read
-- of the relation: how many classes, the smallest, the rows they hold, how many are smaller than
-- :k, how many rows are :unplaced (for a relation that is not a release: rows without an
-- equivalence class id), and for a release its :suppressed rows (class id NULL: no class) and
-- how many of those are :leaked (a published value other than the fully generalized one, from
-- the one-row :root). Independent of the partitioning code: it reads only the published
-- relation (and, for :root, the release's rules).
SELECT
  count(*) FILTER (WHERE NOT c.sup) AS classes,
  min(c.n) FILTER (WHERE NOT c.sup) AS smallest,
  sum(c.n) FILTER (WHERE NOT c.sup) AS total,
  count(*) FILTER (WHERE NOT c.sup AND c.n < :k) AS violating,
  sum(c.unplaced) AS unplaced,
  sum(c.n) FILTER (WHERE c.sup) AS suppressed,
  sum(c.n) FILTER (WHERE c.sup AND :leaked) AS leaked
FROM (
  SELECT count(*) AS n, count(*) FILTER (WHERE :unplaced) AS unplaced, :suppressed AS sup, :grouped
  FROM :source AS s
  GROUP BY :columns
) AS c
CROSS JOIN :root AS z
