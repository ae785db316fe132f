-- Expensive functions and size bombs for MySQL/MariaDB. Each must end within its timeout + 0.5 s,
-- within the byte budget, as the outcome named after `@@` (or be refused by the guard), under the
-- peak RSS bound, with no session of macsql's still running a second after.
-- `bounded` means a timeout or result_too_large, whichever the machine's speed makes come first.
-- @@ timeout | a backtracking regular expression that a KILL does not stop
SELECT REGEXP_REPLACE(REPEAT('ab', 8000000), '(a|ab)(c|bcd)*(d*)', 'x')
-- @@ timeout | a polynomial regular expression on a 16 MB string the query grows
SELECT REGEXP_REPLACE(REPEAT('a', 16000000), 'a*[bc]', 'x') IS NULL
-- @@ timeout | an exponential pattern on a column
SELECT name REGEXP '(a|a)*(b|b)*c' FROM singer
-- @@ bounded | one row of 30 values of 15 MB (450 MB read whole before the budget was checked)
SELECT REPEAT('a', 15000000) AS c0, REPEAT('b', 15000000) AS c1, REPEAT('c', 15000000) AS c2, REPEAT('d', 15000000) AS c3, REPEAT('e', 15000000) AS c4, REPEAT('f', 15000000) AS c5, REPEAT('g', 15000000) AS c6, REPEAT('h', 15000000) AS c7, REPEAT('i', 15000000) AS c8, REPEAT('j', 15000000) AS c9, REPEAT('k', 15000000) AS c10, REPEAT('l', 15000000) AS c11, REPEAT('m', 15000000) AS c12, REPEAT('n', 15000000) AS c13, REPEAT('o', 15000000) AS c14, REPEAT('p', 15000000) AS c15, REPEAT('q', 15000000) AS c16, REPEAT('r', 15000000) AS c17, REPEAT('s', 15000000) AS c18, REPEAT('t', 15000000) AS c19, REPEAT('u', 15000000) AS c20, REPEAT('v', 15000000) AS c21, REPEAT('w', 15000000) AS c22, REPEAT('x', 15000000) AS c23, REPEAT('y', 15000000) AS c24, REPEAT('z', 15000000) AS c25, REPEAT('A', 15000000) AS c26, REPEAT('B', 15000000) AS c27, REPEAT('C', 15000000) AS c28, REPEAT('D', 15000000) AS c29
-- @@ timeout | a cross join of a thousand generated rows, three times
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000) SELECT count(*) FROM c a, c b, c d
