-- Tables and views visible to the connection (the session's own temp schema included, reported
-- as "pg_temp"): where sqlanon looks up the source and checks that output names are free. The
-- comment holds a release's manifest (on its rules table); a view's SQL says what it reads.
SELECT current_database() AS catalog_name,
       CASE WHEN c.relnamespace = pg_my_temp_schema() THEN 'pg_temp' ELSE n.nspname END AS schema_name,
       c.relname AS name,
       CASE WHEN c.relkind IN ('v', 'm') THEN 'view' ELSE 'table' END AS kind,
       c.relpersistence = 't' AS temporary,
       obj_description(c.oid, 'pg_class') AS comment,
       CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END AS sql
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'v', 'm', 'p', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg_toast%'
  AND (n.nspname NOT LIKE 'pg_temp%' OR c.relnamespace = pg_my_temp_schema())
