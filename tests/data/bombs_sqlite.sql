-- Expensive functions and size bombs for SQLite: statements the guard allows (or refuses) that
-- would run for minutes or take gigabytes. Each must end within its timeout + 0.5 s, within the
-- byte budget, as the outcome named after `@@` (or be refused by the guard), changing nothing. `bounded`
-- means a timeout or result_too_large, whichever the machine's speed makes come first;
-- `nothing_built` means the engine declines to build the values (SQLite's printf() gives NULL
-- past its limit) or the result is too large.
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
-- @@ nothing_built | one row of 30 values of 60 MB (a 5.0 GB peak before each value had a share of the budget)
SELECT replace(printf('%.*c', 30000000, 'a'), 'a', 'bb') AS c0, replace(printf('%.*c', 30000000, 'a'), 'a', 'cc') AS c1, replace(printf('%.*c', 30000000, 'a'), 'a', 'dd') AS c2, replace(printf('%.*c', 30000000, 'a'), 'a', 'ee') AS c3, replace(printf('%.*c', 30000000, 'a'), 'a', 'ff') AS c4, replace(printf('%.*c', 30000000, 'a'), 'a', 'gg') AS c5, replace(printf('%.*c', 30000000, 'a'), 'a', 'hh') AS c6, replace(printf('%.*c', 30000000, 'a'), 'a', 'ii') AS c7, replace(printf('%.*c', 30000000, 'a'), 'a', 'jj') AS c8, replace(printf('%.*c', 30000000, 'a'), 'a', 'kk') AS c9, replace(printf('%.*c', 30000000, 'a'), 'a', 'll') AS c10, replace(printf('%.*c', 30000000, 'a'), 'a', 'mm') AS c11, replace(printf('%.*c', 30000000, 'a'), 'a', 'nn') AS c12, replace(printf('%.*c', 30000000, 'a'), 'a', 'oo') AS c13, replace(printf('%.*c', 30000000, 'a'), 'a', 'pp') AS c14, replace(printf('%.*c', 30000000, 'a'), 'a', 'qq') AS c15, replace(printf('%.*c', 30000000, 'a'), 'a', 'rr') AS c16, replace(printf('%.*c', 30000000, 'a'), 'a', 'ss') AS c17, replace(printf('%.*c', 30000000, 'a'), 'a', 'tt') AS c18, replace(printf('%.*c', 30000000, 'a'), 'a', 'uu') AS c19, replace(printf('%.*c', 30000000, 'a'), 'a', 'vv') AS c20, replace(printf('%.*c', 30000000, 'a'), 'a', 'ww') AS c21, replace(printf('%.*c', 30000000, 'a'), 'a', 'xx') AS c22, replace(printf('%.*c', 30000000, 'a'), 'a', 'yy') AS c23, replace(printf('%.*c', 30000000, 'a'), 'a', 'zz') AS c24, replace(printf('%.*c', 30000000, 'a'), 'a', 'BB') AS c25, replace(printf('%.*c', 30000000, 'a'), 'a', 'CC') AS c26, replace(printf('%.*c', 30000000, 'a'), 'a', 'DD') AS c27, replace(printf('%.*c', 30000000, 'a'), 'a', 'EE') AS c28, replace(printf('%.*c', 30000000, 'a'), 'a', 'FF') AS c29
-- @@ bounded | one row of 30 aggregates of 60 MB each (30 x 60 MB in one row)
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<600000) SELECT group_concat(printf('%.100c', 'a'), '') AS g0, group_concat(printf('%.100c', 'b'), '') AS g1, group_concat(printf('%.100c', 'c'), '') AS g2, group_concat(printf('%.100c', 'd'), '') AS g3, group_concat(printf('%.100c', 'e'), '') AS g4, group_concat(printf('%.100c', 'f'), '') AS g5, group_concat(printf('%.100c', 'g'), '') AS g6, group_concat(printf('%.100c', 'h'), '') AS g7, group_concat(printf('%.100c', 'i'), '') AS g8, group_concat(printf('%.100c', 'j'), '') AS g9, group_concat(printf('%.100c', 'k'), '') AS g10, group_concat(printf('%.100c', 'l'), '') AS g11, group_concat(printf('%.100c', 'm'), '') AS g12, group_concat(printf('%.100c', 'n'), '') AS g13, group_concat(printf('%.100c', 'o'), '') AS g14, group_concat(printf('%.100c', 'p'), '') AS g15, group_concat(printf('%.100c', 'q'), '') AS g16, group_concat(printf('%.100c', 'r'), '') AS g17, group_concat(printf('%.100c', 's'), '') AS g18, group_concat(printf('%.100c', 't'), '') AS g19, group_concat(printf('%.100c', 'u'), '') AS g20, group_concat(printf('%.100c', 'v'), '') AS g21, group_concat(printf('%.100c', 'w'), '') AS g22, group_concat(printf('%.100c', 'x'), '') AS g23, group_concat(printf('%.100c', 'y'), '') AS g24, group_concat(printf('%.100c', 'z'), '') AS g25, group_concat(printf('%.100c', 'A'), '') AS g26, group_concat(printf('%.100c', 'B'), '') AS g27, group_concat(printf('%.100c', 'C'), '') AS g28, group_concat(printf('%.100c', 'D'), '') AS g29 FROM r
-- @@ timeout | instr() of half a 4 MB string a recursive CTE doubled, in it: one step interrupt() cannot cut
WITH RECURSIVE r(s, n) AS (SELECT 'a', 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 22) SELECT instr(s, substr(s, 1, length(s) / 2) || 'b') FROM r WHERE n = 22
-- @@ timeout | LIKE of a 190-character constant in a 16 MB doubled string: one step of seconds
WITH RECURSIVE r(s, n) AS (SELECT 'a', 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 24) SELECT s LIKE '%aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab' FROM r WHERE n = 24
-- @@ timeout | instr() in a group_concat() of a cross join, by way of a subquery
SELECT instr(g, substr(g, 1, length(g) / 2) || 'b') FROM (SELECT group_concat('a', '') AS g FROM singer a, singer b, singer c, singer d, singer e, singer f, singer g, singer h)
