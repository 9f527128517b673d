-- sqlanon macros: privacy checks over any table, view or file, in plain DuckDB SQL.
--
-- Install into a database with `sqlanon install-macros DB`, or without Python:
-- `duckdb DB < sql/macros.sql` (or `.read sql/macros.sql` in the DuckDB shell). Every macro is
-- CREATE OR REPLACE, so running the file again updates them.
--
-- Arguments shared by every macro:
--   tbl        name of a table or view (or a Parquet/CSV/JSON path), as a string: 'adult_anon'
--   cols       the columns defining the equivalence classes, as a list of exact names:
--              ['age_min', 'age_max', 'sex']. A QI published as a range is two columns.
--   sensitive  the sensitive column, as a string: 'salary-class'
-- Rows are grouped on `cols` with NULLs grouping together (SQL GROUP BY), like
-- sqlanon.verify. A name that is not a column of `tbl` is an error (never silently ignored).
--
--   SELECT * FROM sqlanon_class_sizes('adult_anon', ['age_min', 'age_max', 'sex']);
--   SELECT * FROM sqlanon_k_check('adult_anon', ['age_min', 'age_max', 'sex'], 10);
--   SELECT * FROM sqlanon_distinct_l_check('adult_anon', ['age_min', 'age_max'], 'salary-class', 2);
--   SELECT * FROM sqlanon_entropy_l_check('adult_anon', ['age_min', 'age_max'], 'salary-class', 1.5);
--   SELECT * FROM sqlanon_variance_check('people_anon', ['age_min', 'age_max'], 'salary', 1e6);
--
-- Each check returns one row: ok (every class passes and there is at least one class), the
-- value achieved by the weakest class, classes, and violating (classes that fail).

-- Equivalence classes: the class columns (in the table's column order) and class_size, one row
-- per class, smallest first.
CREATE OR REPLACE MACRO sqlanon_class_sizes(tbl, cols) AS TABLE
    SELECT COLUMNS(cols::VARCHAR[]), count(*) AS class_size
    FROM query_table(tbl::VARCHAR)
    GROUP BY ALL
    ORDER BY class_size, COLUMNS(cols::VARCHAR[]);

-- k-anonymity: every class holds at least k rows.
-- ok, k_achieved (smallest class; 0 when empty), classes, violating (classes < k), rows.
CREATE OR REPLACE MACRO sqlanon_k_check(tbl, cols, k) AS TABLE
    SELECT
        count(*) > 0 AND count(*) FILTER (WHERE __sqlanon_n < k) = 0 AS ok,
        coalesce(min(__sqlanon_n), 0)::BIGINT AS k_achieved,
        count(*) AS classes,
        count(*) FILTER (WHERE __sqlanon_n < k) AS violating,
        coalesce(sum(__sqlanon_n), 0)::BIGINT AS rows
    FROM (
        SELECT COLUMNS(cols::VARCHAR[]), count(*) AS __sqlanon_n
        FROM query_table(tbl::VARCHAR)
        GROUP BY ALL
    ) AS classes;

-- Distinct l-diversity: every class holds at least l distinct values of the sensitive column
-- (NULL counts as one value). l_achieved is the fewest distinct values of any class.
CREATE OR REPLACE MACRO sqlanon_distinct_l_check(tbl, cols, sensitive, l) AS TABLE
    SELECT
        count(*) > 0 AND count(*) FILTER (WHERE __sqlanon_distinct < l) = 0 AS ok,
        coalesce(min(__sqlanon_distinct), 0)::BIGINT AS l_achieved,
        count(*) AS classes,
        count(*) FILTER (WHERE __sqlanon_distinct < l) AS violating
    FROM (
        SELECT COLUMNS(cols::VARCHAR[]), count(*) AS __sqlanon_distinct
        FROM (
            SELECT COLUMNS(cols::VARCHAR[]), COLUMNS([sensitive::VARCHAR]) AS __sqlanon_s
            FROM query_table(tbl::VARCHAR)
            GROUP BY ALL
        ) AS class_values
        GROUP BY ALL
    ) AS classes;

-- Entropy l-diversity (Machanavajjhala et al., l-Diversity, ICDE 2006): in every class,
-- H = -sum_s p(s) ln p(s) >= ln(l), p(s) the share of the class's rows holding value s (NULL
-- counts as one value). Compared as exp(H) >= l with a relative tolerance of 1e-9, so a class
-- with l equally frequent values passes. l_achieved is the smallest exp(H) (the effective l).
CREATE OR REPLACE MACRO sqlanon_entropy_l_check(tbl, cols, sensitive, l) AS TABLE
    SELECT
        count(*) > 0 AND count(*) FILTER (WHERE __sqlanon_l < l * (1 - 1e-9)) = 0 AS ok,
        coalesce(min(__sqlanon_l), 0)::DOUBLE AS l_achieved,
        count(*) AS classes,
        count(*) FILTER (WHERE __sqlanon_l < l * (1 - 1e-9)) AS violating
    FROM (
        -- H = ln(n) - sum(n_s ln n_s) / n, with n the class size and n_s the rows holding s
        SELECT COLUMNS(cols::VARCHAR[]),
               exp(ln(sum(__sqlanon_n)) - sum(__sqlanon_n * ln(__sqlanon_n)) / sum(__sqlanon_n)) AS __sqlanon_l
        FROM (
            SELECT COLUMNS(cols::VARCHAR[]), COLUMNS([sensitive::VARCHAR]) AS __sqlanon_s,
                   count(*) AS __sqlanon_n
            FROM query_table(tbl::VARCHAR)
            GROUP BY ALL
        ) AS class_values
        GROUP BY ALL
    ) AS classes;

-- Variance diversity (LeFevre, DeWitt, Ramakrishnan, Workload-Aware Anonymization, KDD 2006):
-- in every class the population variance of the numeric sensitive column is at least v
-- (relative tolerance 1e-9). NULLs are ignored; a class without two distinct non-NULL values
-- has variance 0. variance_achieved is the smallest class variance.
CREATE OR REPLACE MACRO sqlanon_variance_check(tbl, cols, sensitive, v) AS TABLE
    SELECT
        count(*) > 0 AND count(*) FILTER (WHERE __sqlanon_var < v - 1e-9 * abs(v)) = 0 AS ok,
        coalesce(min(__sqlanon_var), 0)::DOUBLE AS variance_achieved,
        count(*) AS classes,
        count(*) FILTER (WHERE __sqlanon_var < v - 1e-9 * abs(v)) AS violating
    FROM (
        SELECT COLUMNS(cols::VARCHAR[]),
               coalesce(var_pop(COLUMNS([sensitive::VARCHAR])), 0) AS __sqlanon_var
        FROM query_table(tbl::VARCHAR)
        GROUP BY ALL
    ) AS classes;
