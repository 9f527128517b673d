-- Tables and views visible to the connection: where sqlanon looks up the source and checks that
-- output names are free. The comment holds a release's manifest (on its rules relation); a
-- view's SQL says which relations it reads (so replace= never drops what the source needs).
SELECT database_name, schema_name, table_name AS name, 'table' AS kind, temporary, comment,
       CAST(NULL AS VARCHAR) AS sql
FROM duckdb_tables()
UNION ALL
SELECT database_name, schema_name, view_name AS name, 'view' AS kind, temporary, comment, sql
FROM duckdb_views()
WHERE NOT internal
