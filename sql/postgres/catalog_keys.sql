-- The declared keys of one table (PRIMARY KEY first, then UNIQUE constraints in creation order),
-- each as its column names in key order: a live release view joins the source on one of them.
SELECT con.contype AS constraint_type,
       ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, i)
             JOIN pg_attribute AS a ON a.attrelid = con.conrelid AND a.attnum = k.attnum
             ORDER BY k.i) AS columns
FROM pg_constraint AS con
JOIN pg_class AS c ON c.oid = con.conrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE (CASE WHEN c.relnamespace = pg_my_temp_schema() THEN 'pg_temp' ELSE n.nspname END) = :schema
  AND c.relname = :name AND con.contype IN ('p', 'u')
ORDER BY con.contype <> 'p', con.oid
