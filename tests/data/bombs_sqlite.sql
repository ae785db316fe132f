-- Expensive functions and size bombs for SQLite: statements the guard allows (or refuses) that
-- would run for minutes or take gigabytes. Each must end within its timeout + 0.5 s, within the
-- byte budget, as the outcome named after `@@` (or be refused by the guard), changing nothing. `bounded`
-- means a timeout or result_too_large, whichever the machine's speed makes come first.
-- @@ timeout | endless recursive count
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c
-- @@ timeout | replace() steps of 10-20 MB strings, each longer than a progress-handler tick
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<400) SELECT sum(length(replace(printf('%.*c',10000000+i,'a'),'a','bb'))) FROM r
-- @@ timeout | one printf() of 2 GB: a single step of about 10 s that cannot be interrupted
SELECT length(printf('%.*c', 2000000000, 'x'))
-- @@ result_too_large | a 1 GB zeroblob
SELECT length(zeroblob(1000000000))
-- @@ result_too_large | a 2 GB randomblob
SELECT length(randomblob(2000000000))
-- @@ result_too_large | hex of a 100 MB blob
SELECT hex(randomblob(100000000))
-- @@ bounded | a string that doubles every step
WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT length(s) FROM r
-- @@ bounded | 100 rows of 40 MB cells under a row cap of 100
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<100) SELECT printf('%.*c',40000000+i,'q') FROM r
-- @@ bounded | group_concat of a million 100-character rows
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<1000000) SELECT length(group_concat(printf('%.100c', 'g'))) FROM r
-- @@ bounded | json_group_array of a million 100-character rows
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<1000000) SELECT length(json_group_array(printf('%.100c', 'j'))) FROM r
-- @@ timeout | a cross join of a recursive CTE with itself, sorted
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<100000) SELECT a.i FROM r a, r b ORDER BY a.i * b.i DESC LIMIT 1
-- @@ timeout | LIKE with many wildcards over long strings
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) FROM r WHERE printf('%.5000c', 'a') || i LIKE '%a%a%a%a%a%a%a%a%b'
-- @@ timeout | the singer table joined with an endless CTE
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) FROM singer, r
