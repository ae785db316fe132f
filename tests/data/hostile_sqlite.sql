-- Hostile SQL for the SQLite dialect, written for macsql's tests (tests/test_hostile_corpus.py).
-- Every entry must be refused by the guard with the expected kind, and running it through
-- execute_sql against a copy of Spider's concert_singer must leave the file byte-identical.
-- Format: an entry starts with a line "-- @@ <expected guard kind> | <what it tries>"; its SQL
-- is every following line up to the next such line (comments inside an entry belong to its SQL).
-- @@ write | delete every row
DELETE FROM singer
-- @@ write | delete with an always-true filter
delete from singer where 1 = 1
-- @@ write | update every row
UPDATE singer SET Name = 'pwned'
-- @@ write | insert a row
INSERT INTO singer (Singer_ID, Name) VALUES (100, 'intruder')
-- @@ write | INSERT OR IGNORE
INSERT OR IGNORE INTO singer (Singer_ID, Name) VALUES (1, 'intruder')
-- @@ write | INSERT OR REPLACE overwrites a row
INSERT OR REPLACE INTO singer (Singer_ID, Name) VALUES (1, 'intruder')
-- @@ write | REPLACE INTO (sqlglot falls back to a Command)
REPLACE INTO singer (Singer_ID, Name) VALUES (1, 'intruder')
-- @@ write | INSERT ... SELECT duplicates the table
INSERT INTO singer_in_concert SELECT * FROM singer_in_concert
-- @@ write | UPDATE OR ROLLBACK
UPDATE OR ROLLBACK singer SET Age = 0
-- @@ write | a CTE in front of a DELETE
WITH s AS (SELECT 1) DELETE FROM singer
-- @@ write | a CTE in front of an UPDATE
WITH s AS (SELECT 1 AS one) UPDATE singer SET Age = (SELECT one FROM s)
-- @@ write | a CTE in front of an INSERT
WITH s AS (SELECT 999 AS id) INSERT INTO singer (Singer_ID) SELECT id FROM s
-- @@ write | INSERT DEFAULT VALUES
INSERT INTO concert DEFAULT VALUES
-- @@ write | upsert
INSERT INTO singer (Singer_ID, Name) VALUES (1, 'x') ON CONFLICT (Singer_ID) DO UPDATE SET Name = excluded.Name
-- @@ write | DELETE ... RETURNING looks like it returns rows
DELETE FROM singer RETURNING *
-- @@ write | UPDATE ... RETURNING
UPDATE singer SET Name = 'x' RETURNING Name
-- @@ write | mixed case keywords
dElEtE fRoM singer
-- @@ write | leading blank lines and tabs
  	
	DELETE FROM singer
-- @@ write | a block comment in front
/* just a harmless query */ DELETE FROM singer
-- @@ write | a line comment saying SELECT in front
-- SELECT * FROM singer
DELETE FROM singer
-- @@ write | parentheses in front of a DELETE
(DELETE FROM singer)
-- @@ write | TRUNCATE (not SQLite, still refused)
TRUNCATE TABLE singer
-- @@ write | MERGE (not SQLite, still refused)
MERGE INTO singer USING concert ON singer.Singer_ID = concert.concert_ID WHEN MATCHED THEN DELETE
-- @@ write | a DELETE inside a CTE
WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d
-- @@ write | SELECT INTO creates a table
SELECT * INTO evil FROM singer
-- @@ write | SELECT INTO TEMP
SELECT Name INTO TEMP evil FROM singer
-- @@ multiple_statements | a DELETE after a SELECT
SELECT 1; DELETE FROM singer
-- @@ multiple_statements | a DROP after a SELECT
SELECT * FROM singer; DROP TABLE singer
-- @@ multiple_statements | a semicolon hidden in a block comment, then a real one
SELECT 1 /* ; */ ; DELETE FROM singer
-- @@ multiple_statements | a string with a semicolon, then a real one
SELECT ';' AS x; DELETE FROM singer
-- @@ multiple_statements | a line comment, then a statement on the next line
SELECT 1 -- the rest is a comment, isn't it?
; UPDATE singer SET Age = 0
-- @@ multiple_statements | PRAGMA after a SELECT
SELECT 1;
PRAGMA writable_schema = 1
-- @@ multiple_statements | a quoted identifier with a semicolon, then a real one
SELECT "a;b" FROM singer; DELETE FROM singer
-- @@ multiple_statements | empty statement between
SELECT 1;;DELETE FROM singer
-- @@ multiple_statements | ATTACH after a SELECT
SELECT 1 ; ATTACH '/tmp/macsql_attack.db' AS x
-- @@ multiple_statements | doubled quote inside a string
SELECT 'it''s'; DROP TABLE concert
-- @@ multiple_statements | backslash is no escape in SQLite strings
SELECT 'a\'; DELETE FROM singer; --'
-- @@ multiple_statements | a bracket identifier with a semicolon, then a real one
SELECT [x;y] FROM singer; DELETE FROM singer
-- @@ multiple_statements | a whole transaction
BEGIN; DELETE FROM singer; COMMIT
-- @@ multiple_statements | UNION, then DELETE
SELECT Name FROM singer UNION SELECT Name FROM stadium; DELETE FROM singer
-- @@ multiple_statements | a trigger body holds statements
CREATE TRIGGER t AFTER INSERT ON singer BEGIN DELETE FROM concert; END
-- @@ multiple_statements | a SELECT after a DROP
DROP TABLE singer; SELECT 1
-- @@ ddl | drop a table
DROP TABLE singer
-- @@ ddl | drop a table if it exists
DROP TABLE IF EXISTS singer_in_concert
-- @@ ddl | drop a view
drop view if exists v
-- @@ ddl | create a table
CREATE TABLE evil (x)
-- @@ ddl | create a temporary table
CREATE TEMP TABLE evil (x)
-- @@ ddl | create a temporary table from a query
CREATE TEMPORARY TABLE evil AS SELECT * FROM singer
-- @@ ddl | create a view
CREATE VIEW v AS SELECT * FROM singer
-- @@ ddl | create an index
CREATE INDEX i ON singer (Name)
-- @@ ddl | create a virtual table
CREATE VIRTUAL TABLE f USING fts5(x)
-- @@ ddl | rename a table
ALTER TABLE singer RENAME TO singer_old
-- @@ ddl | add a column
ALTER TABLE singer ADD COLUMN evil TEXT
-- @@ ddl | drop a column
ALTER TABLE singer DROP COLUMN Age
-- @@ ddl | drop an index
DROP INDEX i
-- @@ ddl | drop a trigger
DROP TRIGGER t
-- @@ ddl | REINDEX everything
REINDEX
-- @@ ddl | REINDEX a table
REINDEX singer
-- @@ ddl | CREATE TABLE AS
CREATE TABLE copy AS SELECT * FROM singer
-- @@ forbidden_command | PRAGMA writable_schema
PRAGMA writable_schema = 1
-- @@ forbidden_command | PRAGMA writable_schema=ON
PRAGMA writable_schema=ON
-- @@ forbidden_command | turn query_only off
PRAGMA query_only = 0
-- @@ forbidden_command | turn query_only off, other spelling
pragma query_only=OFF
-- @@ forbidden_command | change the journal mode
PRAGMA journal_mode = delete
-- @@ forbidden_command | switch foreign keys off
PRAGMA foreign_keys = OFF
-- @@ forbidden_command | a read-only PRAGMA is still not a query
PRAGMA table_info(singer)
-- @@ forbidden_command | set the user version
PRAGMA main.user_version = 7
-- @@ forbidden_command | corrupt the schema version
PRAGMA schema_version = 1
-- @@ forbidden_command | attach a file
ATTACH '/tmp/macsql_attack.db' AS y
-- @@ forbidden_command | attach a file by URI, read-write-create
ATTACH DATABASE 'file:/tmp/macsql_attack.db?mode=rwc' AS y
-- @@ forbidden_command | attach an in-memory database
attach database ':memory:' as m
-- @@ forbidden_command | detach
DETACH y
-- @@ forbidden_command | detach, long form
DETACH DATABASE y
-- @@ forbidden_command | VACUUM
VACUUM
-- @@ forbidden_command | VACUUM INTO writes a copy of the database
VACUUM INTO '/tmp/macsql_vacuum_copy.db'
-- @@ forbidden_command | VACUUM a schema
VACUUM main
-- @@ forbidden_command | ANALYZE writes statistics
ANALYZE
-- @@ forbidden_command | ANALYZE a table
ANALYZE singer
-- @@ forbidden_command | EXPLAIN is not a query
EXPLAIN SELECT * FROM singer
-- @@ forbidden_command | EXPLAIN QUERY PLAN of a DELETE
EXPLAIN QUERY PLAN DELETE FROM singer
-- @@ transaction | BEGIN
BEGIN
-- @@ transaction | BEGIN IMMEDIATE takes a write lock
BEGIN IMMEDIATE
-- @@ transaction | BEGIN EXCLUSIVE
BEGIN EXCLUSIVE TRANSACTION
-- @@ transaction | COMMIT
COMMIT
-- @@ transaction | END TRANSACTION
END TRANSACTION
-- @@ transaction | ROLLBACK
ROLLBACK
-- @@ transaction | SAVEPOINT (sqlglot reads it as a column alias)
SAVEPOINT sp1
-- @@ transaction | RELEASE
RELEASE SAVEPOINT sp1
-- @@ transaction | ROLLBACK TO
ROLLBACK TO sp1
-- @@ session | SET
SET x = 1
-- @@ session | USE
USE main
-- @@ session | SHOW
SHOW TABLES
-- @@ forbidden_command | DESCRIBE
DESCRIBE singer
-- @@ forbidden_function | load an extension
SELECT load_extension('/tmp/evil.so')
-- @@ forbidden_function | load an extension with an entry point
SELECT load_extension('libevil', 'sqlite3_evil_init')
-- @@ forbidden_function | upper-case name
SELECT LOAD_EXTENSION('x')
-- @@ forbidden_function | write a file (CLI fileio)
SELECT writefile('/tmp/macsql_pwned', 'x')
-- @@ forbidden_function | read a file
SELECT readfile('/etc/passwd')
-- @@ forbidden_function | start an editor
SELECT edit('x', 'vi')
-- @@ forbidden_function | fts3_tokenizer with a pointer
SELECT fts3_tokenizer('simple', x'4141414141414141')
-- @@ forbidden_function | list a directory
SELECT * FROM fsdir('/etc')
-- @@ forbidden_function | read a zip file
SELECT * FROM zipfile('/tmp/x.zip')
-- @@ forbidden_function | eval() runs SQL text
SELECT eval('DELETE FROM singer')
-- @@ forbidden_function | hidden in a subquery
SELECT Name FROM singer WHERE Age > (SELECT load_extension('x'))
-- @@ forbidden_function | a 2 GB blob
SELECT zeroblob(2000000000)
-- @@ forbidden_function | a 1 GB random blob
SELECT hex(randomblob(1000000000))
-- @@ forbidden_function | hidden in a CTE
WITH x AS (SELECT readfile('/etc/shadow') AS f) SELECT f FROM x
-- @@ forbidden_function | hidden in a UNION branch
SELECT Name FROM singer UNION SELECT writefile('/tmp/macsql_a', 'b')
-- @@ forbidden_function | quoted function name
SELECT "load_extension"('x')
-- @@ forbidden_function | qualified function name
SELECT main.load_extension('x')
-- @@ forbidden_function | inside a CASE
SELECT CASE WHEN 1 THEN readfile('/etc/passwd') END
-- @@ forbidden_function | inside ORDER BY
SELECT * FROM singer ORDER BY load_extension('x')
-- @@ forbidden_function | inside GROUP BY
SELECT count(*) FROM singer GROUP BY writefile('/tmp/macsql_x', Name)
-- @@ forbidden_function | inside a window
SELECT sum(Age) OVER (PARTITION BY readfile(Name)) FROM singer
-- @@ forbidden_function | inside a JOIN condition
SELECT * FROM singer AS a JOIN concert AS b ON load_extension(a.Name) IS NULL
-- @@ forbidden_function | inside VALUES
VALUES (load_extension('x'))
-- @@ locking | FOR UPDATE (not SQLite, still refused)
SELECT * FROM singer FOR UPDATE
-- @@ syntax | a typo
SELEC * FROM singer
-- @@ syntax | no table
SELECT * FROM
-- @@ syntax | an unterminated string
SELECT 'unterminated FROM singer
-- @@ syntax | UNION with a DELETE
SELECT 1 UNION DELETE FROM singer
-- @@ empty | only a semicolon
;
-- @@ empty | only a comment
-- DROP TABLE singer
-- @@ empty | only a block comment
/* DELETE FROM singer */
-- @@ syntax | a stray parenthesis first
) DELETE FROM singer
-- @@ syntax | a parameter marker first
? DELETE FROM singer
-- @@ forbidden_function | writes to the error log
SELECT sqlite_log(1, 'macsql')
-- @@ forbidden_function | FTS5 internals
SELECT fts5(NULL)
-- @@ forbidden_function | an R*Tree check reads shadow tables
SELECT rtreecheck('singer')
-- @@ forbidden_function | a pragma as a table-valued function
SELECT * FROM pragma_database_list()
-- @@ forbidden_function | another pragma function
SELECT name FROM pragma_table_info('singer') WHERE pk
-- @@ forbidden_relation | the temp schema's catalog
SELECT * FROM sqlite_temp_master
-- @@ forbidden_relation | the temp schema, qualified
SELECT * FROM temp.sqlite_master
-- @@ forbidden_relation | statistics tables
SELECT * FROM sqlite_stat1
-- @@ forbidden_relation | a user table's name in the temp schema
SELECT * FROM temp.singer
-- @@ forbidden_relation | raw database pages (an eponymous virtual table)
SELECT * FROM sqlite_dbpage
-- @@ forbidden_relation | page statistics
SELECT name, pgsize FROM dbstat
