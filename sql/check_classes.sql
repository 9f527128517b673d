-- A privacy model checked on every class of a relation: over :per_class (one row per
-- equivalence class with the model's measure and :bad when the class fails it, built by the
-- model, sqlanon.model.privacy), the number of classes, the :worst value of the measure and how
-- many classes fail.
SELECT
  count(*) AS classes,
  :worst AS worst,
  count(*) FILTER (WHERE :bad) AS violations
FROM :per_class
