-- Entropy of one column of a relation, for sqlanon.metrics: total rows and sum over values of
-- c * ln(total / c) (nats times rows); NULL is a value. :label is qualified by the alias s.
SELECT sum(c) AS total, sum(c * ln(CAST(t AS DOUBLE) / c)) AS nh
FROM (
  SELECT c, sum(c) OVER () AS t
  FROM (SELECT count(*) AS c, :label AS label FROM :view AS s GROUP BY :label) AS g
) AS w
