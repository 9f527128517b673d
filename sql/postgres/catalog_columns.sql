-- The columns of one table or view, in order, with their declared types; for an enum type its
-- labels in declaration order, quoted as SQL strings (the house spells it ENUM('a', 'b')).
SELECT a.attname AS column_name, format_type(a.atttypid, a.atttypmod) AS data_type,
       (SELECT string_agg('''' || replace(e.enumlabel, '''', '''''') || '''', ', ' ORDER BY e.enumsortorder)
        FROM pg_enum AS e WHERE e.enumtypid = a.atttypid) AS enum_labels
FROM pg_attribute AS a
JOIN pg_class AS c ON c.oid = a.attrelid
JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE (CASE WHEN c.relnamespace = pg_my_temp_schema() THEN 'pg_temp' ELSE n.nspname END) = :schema
  AND c.relname = :name AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
