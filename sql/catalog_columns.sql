-- The columns of one table or view, in order.
SELECT column_name, data_type
FROM duckdb_columns()
WHERE database_name = :catalog AND schema_name = :schema AND table_name = :name
ORDER BY column_index
