-- Expensive functions and size bombs for PostgreSQL: statements the guard allows (or refuses)
-- that would run for minutes or take gigabytes. Each must end within its timeout + 0.5 s, within
-- the byte budget, as the outcome named after `@@` (or be refused by the guard), changing nothing.
-- `bounded` means a timeout or result_too_large, whichever the machine's speed makes come first.
-- @@ timeout | md5 of 1 GB: the server does not check for cancellation inside it
SELECT md5(repeat('x', 1000000000))
-- @@ timeout | a count over a trillion generated rows
SELECT count(*) FROM generate_series(1, 1000000000000) g
-- @@ timeout | a cross join of two generated series
SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b
-- @@ timeout | md5 of a billion numbers
SELECT sum(length(md5(g::text))) FROM generate_series(1, 1000000000) g
-- @@ timeout | array_agg of a billion numbers
SELECT cardinality(array_agg(g)) FROM generate_series(1, 1000000000) g
-- @@ bounded | 100 rows of 40 MB cells under a row cap of 100
SELECT repeat('y', 40000000 + g) FROM generate_series(1, 100) g
-- @@ bounded | one cell of 600 MB
SELECT repeat('z', 600000000)
-- @@ bounded | repeat past PostgreSQL's 1 GB value limit
SELECT length(repeat(repeat('x', 1000000), 2000))
-- @@ timeout | string_agg of a million 1 KB strings, sorted
SELECT length(string_agg(repeat(md5(g::text), 32), '' ORDER BY md5(g::text))) FROM generate_series(1, 10000000) g
-- @@ timeout | endless rows of 1 KB, fetched whole (the scorers fetch everything)
SELECT g, repeat('r', 1000) FROM generate_series(1, 100000000) g
-- @@ timeout | a recursive string that doubles every step
WITH RECURSIVE r(s, n) AS (SELECT 'x'::text, 1 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 40) SELECT max(length(s)) FROM r
-- @@ timeout | the singer table joined with a generated billion rows
SELECT count(*) FROM singer, generate_series(1, 1000000000) g
