-- Expensive functions and size bombs for DuckDB, which runs inside macsql's own process: its memory
-- is ours. Each must end within its timeout + 0.5 s, within the byte budget, as the outcome named
-- after `@@` (or be refused by the guard), under the peak RSS bound, changing nothing.
-- `bounded` means a timeout or result_too_large, whichever the machine's speed makes come first.
-- @@ result_too_large | a list of 30 million integers in one cell (3.2 GB before)
SELECT list(i) FROM range(30000000) t(i)
-- @@ bounded | a list of 3 million integers: 24 MB in DuckDB, over 100 MB as Python integers
SELECT list(i) FROM range(3000000) t(i)
-- @@ bounded | a list of a million structs, each a Python dict
SELECT list({'a': i, 'b': 'x'}) FROM range(1000000) t(i)
-- @@ bounded | a million maps
SELECT map([i], [i]) AS m FROM range(1000000) t(i)
-- @@ timeout | damerau_levenshtein on 30,000-character strings (2.3 GB two seconds in, before)
SELECT damerau_levenshtein(repeat('ab', 15000), repeat('ba', 15000))
-- @@ timeout | a list of 100 million integers built by one scalar call
SELECT range(100000000)
-- @@ timeout | a billion-character string built by one call
SELECT length(repeat('x', 1000000000))
-- @@ timeout | a cross join of two 100,000-row ranges
SELECT sum(a.range * b.range) FROM range(100000) a, range(100000) b
