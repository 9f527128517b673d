-- t-closeness of a relation: over :per_class (one row per equivalence class with its Earth
-- Mover's Distance :value from the whole relation's sensitive distribution and :bad when it
-- exceeds t; built by sqlanon.publish.closeness), the number of classes, the largest distance
-- and how many classes exceed t.
SELECT
  count(*) AS classes,
  max(:value) AS worst,
  count(*) FILTER (WHERE :bad) AS violations
FROM :per_class
