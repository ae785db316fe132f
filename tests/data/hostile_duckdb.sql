-- Hostile SQL for the DuckDB dialect, written for macsql's tests (tests/test_duckdb_backend.py).
-- Every entry must be refused by the guard with the expected kind, and running it through
-- execute_sql against a DuckDB copy of Spider's concert_singer must leave the file byte-identical.
-- Format: an entry starts with a line "-- @@ <expected guard kind> | <what it tries>"; its SQL
-- is every following line up to the next such line.
-- @@ write | delete every row
DELETE FROM singer
-- @@ write | update every row
UPDATE singer SET name = 'pwned'
-- @@ write | insert a row
INSERT INTO singer (singer_id, name) VALUES (100, 'x')
-- @@ write | INSERT OR REPLACE
INSERT OR REPLACE INTO singer (singer_id, name) VALUES (1, 'x')
-- @@ write | INSERT OR IGNORE
INSERT OR IGNORE INTO singer (singer_id) VALUES (1)
-- @@ write | INSERT BY NAME
INSERT INTO singer BY NAME SELECT 101 AS singer_id
-- @@ write | INSERT ... SELECT
INSERT INTO singer_in_concert SELECT * FROM singer_in_concert
-- @@ write | INSERT ... RETURNING
INSERT INTO stadium (stadium_id) VALUES (99) RETURNING *
-- @@ write | DELETE ... RETURNING
DELETE FROM concert RETURNING *
-- @@ write | UPDATE ... FROM
UPDATE singer SET age = 0 FROM concert WHERE true
-- @@ write | a CTE in front of a DELETE
WITH s AS (SELECT 1) DELETE FROM singer
-- @@ write | a CTE in front of an INSERT
WITH s AS (SELECT 9 AS id) INSERT INTO singer (singer_id) SELECT id FROM s
-- @@ write | TRUNCATE
TRUNCATE singer
-- @@ write | TRUNCATE TABLE
TRUNCATE TABLE concert
-- @@ write | lower-case delete
delete from stadium where 1 = 1
-- @@ write | parenthesised DELETE
(DELETE FROM singer)
-- @@ write | INSERT DEFAULT VALUES
INSERT INTO stadium DEFAULT VALUES
-- @@ write | ON CONFLICT DO UPDATE
INSERT INTO singer (singer_id) VALUES (1) ON CONFLICT DO UPDATE SET name = 'x'
-- @@ write | SELECT ... INTO a new table
SELECT * INTO stolen FROM singer
-- @@ write | MERGE INTO
MERGE INTO singer USING concert ON true WHEN MATCHED THEN DELETE
-- @@ ddl | drop a table
DROP TABLE singer
-- @@ ddl | drop if exists cascade
DROP TABLE IF EXISTS concert CASCADE
-- @@ ddl | create a table
CREATE TABLE evil (a INT)
-- @@ ddl | create table as select
CREATE TABLE copy_of AS SELECT * FROM singer
-- @@ ddl | CREATE OR REPLACE TABLE wipes one
CREATE OR REPLACE TABLE singer AS SELECT 1 AS a
-- @@ ddl | create a temp table
CREATE TEMP TABLE t AS SELECT 1
-- @@ ddl | create a view
CREATE VIEW v AS SELECT * FROM singer
-- @@ ddl | create a macro
CREATE MACRO add1(a) AS a + 1
-- @@ ddl | create a table macro
CREATE MACRO leak() AS TABLE SELECT * FROM singer
-- @@ ddl | create a sequence
CREATE SEQUENCE seq1
-- @@ ddl | create a schema
CREATE SCHEMA evil
-- @@ ddl | create an index
CREATE INDEX i ON singer (name)
-- @@ ddl | create a type
CREATE TYPE mood AS ENUM ('a', 'b')
-- @@ ddl | create a secret
CREATE SECRET s (TYPE s3, KEY_ID 'x', SECRET 'y')
-- @@ ddl | create a persistent secret
CREATE PERSISTENT SECRET p (TYPE s3, KEY_ID 'x', SECRET 'y')
-- @@ ddl | alter table add column
ALTER TABLE singer ADD COLUMN pwned INT
-- @@ ddl | alter table rename
ALTER TABLE singer RENAME TO gone
-- @@ ddl | alter view
ALTER VIEW v RENAME TO w
-- @@ ddl | drop a schema
DROP SCHEMA main CASCADE
-- @@ ddl | drop a macro
DROP MACRO add1
-- @@ ddl | drop a secret
DROP SECRET s
-- @@ ddl | comment on a table
COMMENT ON TABLE singer IS 'pwned'
-- @@ forbidden_command | IMPORT DATABASE
IMPORT DATABASE '/tmp/macsql_import'
-- @@ ddl | lower-case create
create table x as select 1
-- @@ ddl | CTE then CREATE
WITH s AS (SELECT 1) CREATE TABLE x AS SELECT * FROM s
-- @@ forbidden_command | COPY a table to a file
COPY singer TO '/tmp/macsql_singer.csv'
-- @@ forbidden_command | COPY a query to a file
COPY (SELECT * FROM singer) TO '/tmp/macsql_q.parquet' (FORMAT parquet)
-- @@ forbidden_command | COPY from a file into a table
COPY singer FROM '/etc/passwd'
-- @@ forbidden_command | COPY FROM DATABASE
COPY FROM DATABASE main TO other
-- @@ forbidden_command | EXPORT DATABASE
EXPORT DATABASE '/tmp/macsql_export'
-- @@ forbidden_command | EXPORT DATABASE as parquet
EXPORT DATABASE '/tmp/macsql_export2' (FORMAT parquet)
-- @@ forbidden_command | ATTACH a new file
ATTACH '/tmp/macsql_attached.duckdb' AS evil
-- @@ forbidden_command | ATTACH DATABASE
ATTACH DATABASE '/tmp/macsql_a2.duckdb' AS a2
-- @@ forbidden_command | ATTACH IF NOT EXISTS
ATTACH IF NOT EXISTS '/tmp/macsql_a3.duckdb'
-- @@ forbidden_command | ATTACH a SQLite file
ATTACH '/tmp/macsql_a4.sqlite' (TYPE sqlite)
-- @@ forbidden_command | ATTACH a Postgres server
ATTACH 'dbname=postgres host=127.0.0.1' AS pg (TYPE postgres)
-- @@ forbidden_command | DETACH
DETACH evil
-- @@ forbidden_command | INSTALL an extension
INSTALL httpfs
-- @@ forbidden_command | FORCE INSTALL
FORCE INSTALL httpfs
-- @@ forbidden_command | INSTALL from a repository
INSTALL spatial FROM community
-- @@ forbidden_command | LOAD an extension
LOAD httpfs
-- @@ forbidden_command | LOAD a file
LOAD '/tmp/macsql_ext.duckdb_extension'
-- @@ forbidden_command | PRAGMA table_info
PRAGMA table_info('singer')
-- @@ forbidden_command | PRAGMA enable_profiling
PRAGMA enable_profiling
-- @@ forbidden_command | PRAGMA with a value
PRAGMA memory_limit = '1GB'
-- @@ forbidden_command | PRAGMA database_size
PRAGMA database_size
-- @@ forbidden_command | CHECKPOINT
CHECKPOINT
-- @@ forbidden_command | FORCE CHECKPOINT
FORCE CHECKPOINT
-- @@ forbidden_command | VACUUM
VACUUM
-- @@ forbidden_command | ANALYZE
ANALYZE
-- @@ forbidden_command | CALL a pragma function
CALL pragma_version()
-- @@ forbidden_command | CALL checkpoint
CALL checkpoint()
-- @@ forbidden_command | EXPLAIN ANALYZE runs the query
EXPLAIN ANALYZE SELECT * FROM singer
-- @@ forbidden_command | DESCRIBE
DESCRIBE singer
-- @@ forbidden_command | SUMMARIZE
SUMMARIZE singer
-- @@ session | SET threads
SET threads = 1
-- @@ session | SET enable_external_access
SET enable_external_access = true
-- @@ session | SET GLOBAL
SET GLOBAL memory_limit = '100GB'
-- @@ session | SET lock_configuration
SET lock_configuration = false
-- @@ session | SET VARIABLE
SET VARIABLE x = 42
-- @@ session | RESET
RESET threads
-- @@ session | USE another schema
USE main
-- @@ session | PREPARE
PREPARE p AS DELETE FROM singer
-- @@ session | EXECUTE
EXECUTE p
-- @@ session | DEALLOCATE
DEALLOCATE p
-- @@ session | SHOW tables
SHOW TABLES
-- @@ session | SET search_path
SET search_path = 'main'
-- @@ transaction | BEGIN
BEGIN TRANSACTION
-- @@ transaction | COMMIT
COMMIT
-- @@ transaction | ROLLBACK
ROLLBACK
-- @@ transaction | ABORT
ABORT
-- @@ forbidden_function | read_csv of /etc/passwd
SELECT * FROM read_csv('/etc/passwd')
-- @@ forbidden_function | read_csv_auto
SELECT * FROM read_csv_auto('/etc/hosts')
-- @@ forbidden_function | read_parquet over https
SELECT * FROM read_parquet('https://example.com/x.parquet')
-- @@ forbidden_function | read_json
SELECT * FROM read_json('/tmp/macsql_x.json')
-- @@ forbidden_function | read_text
SELECT content FROM read_text('/etc/passwd')
-- @@ forbidden_function | read_blob
SELECT content FROM read_blob('/etc/shadow')
-- @@ forbidden_function | read_ndjson
SELECT * FROM read_ndjson('/tmp/macsql_x.ndjson')
-- @@ forbidden_function | a future read_ function
SELECT * FROM read_avro('/tmp/macsql_x.avro')
-- @@ forbidden_function | a write_ function
SELECT write_csv('/tmp/macsql_w.csv')
-- @@ forbidden_function | parquet_scan
SELECT * FROM parquet_scan('/tmp/macsql_p.parquet')
-- @@ forbidden_function | parquet_metadata
SELECT * FROM parquet_metadata('/tmp/macsql_p.parquet')
-- @@ forbidden_function | glob lists files
SELECT * FROM glob('/etc/*')
-- @@ forbidden_function | sniff_csv
SELECT * FROM sniff_csv('/etc/passwd')
-- @@ forbidden_function | query() runs SQL text
SELECT * FROM query('DELETE FROM singer')
-- @@ forbidden_function | query_table
SELECT * FROM query_table('singer')
-- @@ forbidden_function | sqlite_scan
SELECT * FROM sqlite_scan('/tmp/macsql_s.db', 't')
-- @@ forbidden_function | postgres_scan
SELECT * FROM postgres_scan('host=127.0.0.1', 'public', 't')
-- @@ forbidden_function | a read function in a subquery
SELECT name FROM singer WHERE name IN (SELECT column0 FROM read_csv('/etc/passwd'))
-- @@ forbidden_function | a read function in a CTE
WITH f AS (SELECT * FROM read_text('/etc/hostname')) SELECT * FROM f
-- @@ forbidden_function | upper-case READ_CSV
SELECT * FROM READ_CSV('/etc/passwd')
-- @@ forbidden_function | a file path as a table
SELECT * FROM '/etc/passwd'
-- @@ forbidden_function | a CSV file as a table
SELECT * FROM 'macsql_data.csv'
-- @@ forbidden_function | an https URL as a table (httpfs)
SELECT * FROM 'https://example.com/data.parquet'
-- @@ forbidden_function | an s3 URL as a table (httpfs)
SELECT * FROM 's3://bucket/data.parquet'
-- @@ forbidden_function | FROM-first file read
FROM '/etc/passwd'
-- @@ forbidden_function | getenv
SELECT getenv('HOME')
-- @@ forbidden_function | duckdb_secrets
SELECT * FROM duckdb_secrets()
-- @@ forbidden_command | load_aws_credentials
CALL load_aws_credentials()
-- @@ forbidden_function | nextval on a sequence
SELECT nextval('seq1')
-- @@ forbidden_function | checkpoint table function
SELECT * FROM checkpoint()
-- @@ forbidden_function | force_checkpoint table function
SELECT * FROM force_checkpoint()
-- @@ forbidden_function | pragma_ table function
SELECT * FROM pragma_database_size()
-- @@ forbidden_function | iceberg_scan
SELECT * FROM iceberg_scan('s3://b/t')
-- @@ forbidden_function | delta_scan
SELECT * FROM delta_scan('/tmp/macsql_delta')
-- @@ forbidden_function | st_read
SELECT * FROM st_read('/tmp/macsql_x.shp')
-- @@ forbidden_function | httpfs through read_json_auto
SELECT * FROM read_json_auto('http://169.254.169.254/latest/meta-data')
-- @@ multiple_statements | a query then DROP
SELECT 1; DROP TABLE singer
-- @@ multiple_statements | a query then COPY
SELECT * FROM singer; COPY singer TO '/tmp/macsql_m.csv'
-- @@ multiple_statements | a query then ATTACH
SELECT 1; ATTACH '/tmp/macsql_m.duckdb'
-- @@ multiple_statements | SET then query
SELECT 2; SET enable_external_access = true
-- @@ multiple_statements | a query then INSTALL
select 1;install httpfs
-- @@ syntax | unterminated string
SELECT 'abc FROM singer
-- @@ syntax | gibberish
SELEKT * FROM singer
-- @@ syntax | only a comment then a word
/* hello */ pwn
-- @@ unstoppable | damerau_levenshtein of two grown strings (issue 26)
SELECT damerau_levenshtein(repeat('ab', 15000), repeat('ba', 15000))
-- @@ unstoppable | levenshtein of two columns (issue 26)
SELECT levenshtein(a.name, b.name) FROM singer a, singer b
-- @@ unstoppable | a list of 100 million integers from one call (issue 26)
SELECT range(100000000)
-- @@ unstoppable | a billion-character string (issue 26)
SELECT repeat('x', 1000000000)
-- @@ forbidden_function | the server's settings (issue 26)
SELECT current_setting('memory_limit')
