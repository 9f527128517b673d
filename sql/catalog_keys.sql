-- The declared keys of one table (PRIMARY KEY first, then UNIQUE constraints in declaration
-- order): a live release view joins the source on one of them.
SELECT constraint_type, constraint_column_names
FROM duckdb_constraints()
WHERE database_name = :catalog AND schema_name = :schema AND table_name = :name
  AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
ORDER BY constraint_type = 'UNIQUE', constraint_index
