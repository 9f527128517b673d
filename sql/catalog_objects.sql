-- Tables and views visible to the connection: where sqlanon looks up the source and checks that
-- output names are free.
SELECT database_name, schema_name, table_name AS name, 'table' AS kind, temporary
FROM duckdb_tables()
UNION ALL
SELECT database_name, schema_name, view_name AS name, 'view' AS kind, temporary
FROM duckdb_views()
WHERE NOT internal
