-- Hostile SQL for the PostgreSQL dialect, written for macsql's tests (tests/test_hostile_corpus.py).
-- Every entry must be refused by the guard with the expected kind, and running it through
-- execute_sql against the PostgreSQL copy of Spider's concert_singer must leave every row of
-- every table unchanged.
-- Format: an entry starts with a line "-- @@ <expected guard kind> | <what it tries>"; its SQL
-- is every following line up to the next such line (comments inside an entry belong to its SQL).
-- @@ write | delete every row
DELETE FROM singer
-- @@ write | update every row
UPDATE singer SET name = 'pwned'
-- @@ write | insert a row
INSERT INTO singer (singer_id, name) VALUES (100, 'intruder')
-- @@ write | insert, ignoring conflicts
INSERT INTO singer (singer_id, name) VALUES (1, 'x') ON CONFLICT DO NOTHING
-- @@ write | upsert
INSERT INTO singer (singer_id, name) VALUES (1, 'x') ON CONFLICT (singer_id) DO UPDATE SET name = EXCLUDED.name
-- @@ write | MERGE
MERGE INTO singer s USING concert c ON s.singer_id = c.concert_id WHEN MATCHED THEN DELETE
-- @@ write | TRUNCATE
TRUNCATE singer
-- @@ write | TRUNCATE ... CASCADE
TRUNCATE TABLE singer, concert CASCADE
-- @@ write | mixed case
DeLeTe FrOm singer
-- @@ write | leading comment
/* harmless */ DELETE FROM singer
-- @@ write | nested block comments hide nothing
/* outer /* inner ; */ still a comment */ DELETE FROM singer
-- @@ write | a DELETE inside a CTE
WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d
-- @@ write | an UPDATE inside a CTE
WITH u AS (UPDATE singer SET age = 0 RETURNING 1) SELECT count(*) FROM u
-- @@ write | an INSERT inside a CTE
WITH i AS (INSERT INTO singer (singer_id) VALUES (999) RETURNING *) SELECT * FROM i
-- @@ write | a data-modifying CTE after a harmless one
WITH a AS (SELECT 1), d AS (DELETE FROM concert RETURNING *) SELECT * FROM a
-- @@ write | a data-modifying CTE in a subquery
SELECT * FROM (WITH d AS (DELETE FROM singer RETURNING *) SELECT * FROM d) AS s
-- @@ write | a MATERIALIZED data-modifying CTE
WITH d AS MATERIALIZED (DELETE FROM singer_in_concert RETURNING *) SELECT count(*) FROM d
-- @@ write | a CTE in front of a DELETE
WITH ids AS (SELECT singer_id FROM singer) DELETE FROM singer WHERE singer_id IN (SELECT singer_id FROM ids)
-- @@ write | SELECT INTO creates a table
SELECT * INTO evil FROM singer
-- @@ write | SELECT INTO TEMP
SELECT * INTO TEMP evil FROM singer
-- @@ write | SELECT INTO UNLOGGED
SELECT name INTO UNLOGGED TABLE evil FROM singer
-- @@ write | REFRESH MATERIALIZED VIEW
REFRESH MATERIALIZED VIEW mv
-- @@ write | DELETE ... RETURNING
DELETE FROM singer RETURNING *
-- @@ forbidden_command | COPY from a server file
COPY singer FROM '/etc/passwd'
-- @@ forbidden_command | COPY to a server file
COPY singer TO '/tmp/macsql_copy.csv'
-- @@ forbidden_command | COPY to a program
COPY (SELECT 1) TO PROGRAM 'touch /tmp/macsql_pwned'
-- @@ forbidden_command | COPY from a program
COPY singer FROM PROGRAM 'echo 1'
-- @@ forbidden_command | COPY to STDOUT is still COPY
COPY singer TO STDOUT
-- @@ ddl | drop a table
DROP TABLE singer CASCADE
-- @@ ddl | drop the schema
DROP SCHEMA public CASCADE
-- @@ ddl | drop the database
DROP DATABASE concert_singer
-- @@ ddl | temporary table
CREATE TEMP TABLE t (x int)
-- @@ ddl | CREATE TABLE AS
CREATE TABLE evil AS SELECT * FROM singer
-- @@ ddl | a function
CREATE FUNCTION evil() RETURNS int LANGUAGE sql AS $$ DELETE FROM singer RETURNING 1 $$
-- @@ ddl | an extension
CREATE EXTENSION dblink
-- @@ ddl | an extension, if missing
CREATE EXTENSION IF NOT EXISTS adminpack
-- @@ ddl | change an owner
ALTER TABLE singer OWNER TO postgres
-- @@ ddl | ALTER SYSTEM
ALTER SYSTEM SET fsync = off
-- @@ ddl | change a password
ALTER ROLE macsql WITH PASSWORD 'owned'
-- @@ ddl | make the database writable by default
ALTER DATABASE concert_singer SET default_transaction_read_only = off
-- @@ ddl | GRANT
GRANT ALL ON singer TO PUBLIC
-- @@ ddl | REVOKE
REVOKE SELECT ON singer FROM PUBLIC
-- @@ ddl | COMMENT
COMMENT ON TABLE singer IS 'owned'
-- @@ ddl | SECURITY LABEL (sqlglot cannot parse it)
SECURITY LABEL ON TABLE singer IS 'x'
-- @@ ddl | REINDEX
REINDEX TABLE singer
-- @@ ddl | CLUSTER
CLUSTER singer
-- @@ ddl | a rule
CREATE RULE r AS ON SELECT TO singer DO INSTEAD SELECT * FROM concert
-- @@ ddl | a foreign server
CREATE SERVER evil FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host 'evil.example')
-- @@ ddl | drop everything a role owns
DROP OWNED BY macsql
-- @@ ddl | reassign ownership
REASSIGN OWNED BY macsql TO postgres
-- @@ ddl | import a foreign schema
IMPORT FOREIGN SCHEMA public FROM SERVER evil INTO public
-- @@ forbidden_command | VACUUM FULL
VACUUM FULL singer
-- @@ forbidden_command | ANALYZE
ANALYZE singer
-- @@ transaction | BEGIN
BEGIN
-- @@ transaction | BEGIN READ WRITE
BEGIN READ WRITE
-- @@ transaction | START TRANSACTION READ WRITE
START TRANSACTION READ WRITE
-- @@ transaction | COMMIT
COMMIT
-- @@ transaction | END
END
-- @@ transaction | ROLLBACK
ROLLBACK
-- @@ transaction | ABORT
ABORT
-- @@ transaction | SAVEPOINT
SAVEPOINT s
-- @@ transaction | RELEASE SAVEPOINT
RELEASE SAVEPOINT s
-- @@ transaction | ROLLBACK TO SAVEPOINT
ROLLBACK TO SAVEPOINT s
-- @@ transaction | COMMIT PREPARED
COMMIT PREPARED 'x'
-- @@ session | PREPARE TRANSACTION
PREPARE TRANSACTION 'x'
-- @@ session | SET TRANSACTION READ WRITE
SET TRANSACTION READ WRITE
-- @@ session | SET ROLE
SET ROLE postgres
-- @@ session | SET SESSION AUTHORIZATION
SET SESSION AUTHORIZATION postgres
-- @@ session | switch the timeout off
SET statement_timeout = 0
-- @@ session | switch the timeout off locally
SET LOCAL statement_timeout = 0
-- @@ session | make transactions writable
SET default_transaction_read_only = off
-- @@ session | redirect name lookup
SET search_path = evil, public
-- @@ session | RESET ALL
RESET ALL
-- @@ session | RESET one setting
RESET statement_timeout
-- @@ session | DISCARD
DISCARD ALL
-- @@ session | LISTEN
LISTEN ch
-- @@ session | UNLISTEN
UNLISTEN *
-- @@ session | NOTIFY
NOTIFY ch, 'x'
-- @@ session | PREPARE a DELETE
PREPARE p AS DELETE FROM singer
-- @@ session | EXECUTE
EXECUTE p
-- @@ session | DEALLOCATE
DEALLOCATE ALL
-- @@ session | DECLARE a cursor
DECLARE c CURSOR FOR SELECT 1
-- @@ session | FETCH
FETCH ALL FROM c
-- @@ session | MOVE
MOVE c
-- @@ session | CLOSE
CLOSE c
-- @@ session | SHOW
SHOW ALL
-- @@ forbidden_command | LOAD a shared library
LOAD 'auto_explain'
-- @@ forbidden_command | DO block; its semicolons are inside the dollar quotes
DO $$ BEGIN DELETE FROM singer; END $$
-- @@ forbidden_command | DO with a language and a tagged dollar quote
DO LANGUAGE plpgsql $body$ BEGIN EXECUTE 'DROP TABLE singer'; END $body$
-- @@ forbidden_command | CALL
CALL evil_procedure()
-- @@ forbidden_command | CHECKPOINT
CHECKPOINT
-- @@ forbidden_command | EXPLAIN ANALYZE runs its statement
EXPLAIN ANALYZE DELETE FROM singer
-- @@ forbidden_command | EXPLAIN
EXPLAIN SELECT 1
-- @@ locking | LOCK TABLE
LOCK TABLE singer IN ACCESS EXCLUSIVE MODE
-- @@ locking | FOR UPDATE
SELECT * FROM singer FOR UPDATE
-- @@ locking | FOR NO KEY UPDATE
SELECT * FROM singer FOR NO KEY UPDATE
-- @@ locking | FOR SHARE
SELECT * FROM singer FOR SHARE
-- @@ locking | FOR KEY SHARE
SELECT * FROM singer FOR KEY SHARE
-- @@ locking | FOR UPDATE SKIP LOCKED
SELECT * FROM singer FOR UPDATE SKIP LOCKED
-- @@ locking | FOR UPDATE NOWAIT
SELECT * FROM singer FOR UPDATE NOWAIT
-- @@ locking | FOR UPDATE OF a table
SELECT * FROM singer s JOIN concert c ON TRUE FOR UPDATE OF s
-- @@ locking | a locking subquery
SELECT * FROM (SELECT * FROM singer FOR UPDATE) AS s
-- @@ locking | a locking CTE
WITH l AS (SELECT * FROM singer FOR SHARE) SELECT * FROM l
-- @@ forbidden_function | pg_sleep
SELECT pg_sleep(10)
-- @@ forbidden_function | pg_sleep_for
SELECT pg_sleep_for('10 seconds')
-- @@ forbidden_function | pg_sleep_until
SELECT pg_sleep_until(now() + interval '1 hour')
-- @@ forbidden_function | schema-qualified
SELECT pg_catalog.pg_sleep(5)
-- @@ forbidden_function | quoted name
SELECT "pg_sleep"(5)
-- @@ forbidden_function | upper case
SELECT PG_SLEEP(5)
-- @@ forbidden_function | a Unicode-escaped name (PostgreSQL reads it as pg_sleep)
SELECT U&"pg\005fsleep"(5)
-- @@ forbidden_function | as a table function
SELECT * FROM pg_sleep(5)
-- @@ forbidden_function | in a WHERE clause
SELECT 1 WHERE pg_sleep(5) IS NOT NULL
-- @@ forbidden_function | in ORDER BY
SELECT name FROM singer ORDER BY pg_sleep(1)
-- @@ forbidden_function | ROWS FROM
SELECT * FROM ROWS FROM (pg_sleep(1))
-- @@ forbidden_function | in a scalar subquery
SELECT (SELECT pg_sleep(1))
-- @@ forbidden_function | in VALUES
VALUES (pg_sleep(1))
-- @@ forbidden_function | read a server file
SELECT pg_read_file('/etc/passwd')
-- @@ forbidden_function | read part of a server file
SELECT pg_read_file('postgresql.conf', 0, 100)
-- @@ forbidden_function | read a binary file
SELECT pg_read_binary_file('/etc/passwd')
-- @@ forbidden_function | in a UNION branch
SELECT name FROM singer UNION SELECT pg_read_file('/etc/passwd')
-- @@ forbidden_function | list a directory
SELECT * FROM pg_ls_dir('.')
-- @@ forbidden_function | LATERAL directory listing
SELECT * FROM singer, LATERAL pg_ls_dir('.') AS f
-- @@ forbidden_function | stat a file
SELECT pg_stat_file('postgresql.conf')
-- @@ forbidden_function | list the log directory
SELECT * FROM pg_ls_logdir()
-- @@ forbidden_function | list the WAL directory
SELECT * FROM pg_ls_waldir()
-- @@ forbidden_function | import a file as a large object
SELECT lo_import('/etc/passwd')
-- @@ forbidden_function | export a large object to a file
SELECT lo_export(16384, '/tmp/macsql_lo')
-- @@ forbidden_function | create a large object
SELECT lo_from_bytea(0, 'x')
-- @@ forbidden_function | unlink a large object
SELECT lo_unlink(16384)
-- @@ forbidden_function | dblink runs SQL elsewhere (or here, writable)
SELECT * FROM dblink('dbname=concert_singer', 'DELETE FROM singer RETURNING 1') AS t(x int)
-- @@ forbidden_function | dblink_exec
SELECT dblink_exec('dbname=concert_singer', 'DROP TABLE singer')
-- @@ forbidden_function | dblink_connect
SELECT dblink_connect('evil', 'host=evil.example')
-- @@ forbidden_function | kill other sessions
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
-- @@ forbidden_function | cancel other queries
SELECT pg_cancel_backend(1)
-- @@ forbidden_function | make the transaction writable
SELECT set_config('default_transaction_read_only', 'off', false)
-- @@ forbidden_function | switch the timeout off
SELECT set_config('statement_timeout', '0', true)
-- @@ forbidden_function | reload the configuration
SELECT pg_reload_conf()
-- @@ forbidden_function | rotate the log
SELECT pg_rotate_logfile()
-- @@ forbidden_function | advisory lock
SELECT pg_advisory_lock(1)
-- @@ forbidden_function | try an advisory lock
SELECT pg_try_advisory_lock(1)
-- @@ forbidden_function | transaction advisory lock
SELECT pg_advisory_xact_lock(1)
-- @@ forbidden_function | unlock all
SELECT pg_advisory_unlock_all()
-- @@ forbidden_function | consume a transaction id
SELECT txid_current()
-- @@ forbidden_function | consume a transaction id, new name
SELECT pg_current_xact_id()
-- @@ forbidden_function | nextval writes
SELECT nextval('singer_id_seq')
-- @@ forbidden_function | setval writes
SELECT setval('singer_id_seq', 1)
-- @@ forbidden_function | query_to_xml runs SQL text
SELECT query_to_xml('DELETE FROM singer RETURNING *', true, false, '')
-- @@ forbidden_function | table_to_xml
SELECT table_to_xml('singer', true, false, '')
-- @@ forbidden_function | cursor_to_xml
SELECT cursor_to_xml('c', 1, true, false, '')
-- @@ forbidden_function | database_to_xml
SELECT database_to_xml(true, false, '')
-- @@ forbidden_function | ts_stat runs SQL text
SELECT * FROM ts_stat('SELECT to_tsvector(name) FROM singer')
-- @@ forbidden_function | pg_notify
SELECT pg_notify('ch', 'x')
-- @@ forbidden_function | restore point
SELECT pg_create_restore_point('x')
-- @@ forbidden_function | switch WAL
SELECT pg_switch_wal()
-- @@ forbidden_function | replication slot
SELECT pg_create_logical_replication_slot('s', 'test_decoding')
-- @@ forbidden_function | drop a replication slot
SELECT pg_drop_replication_slot('s')
-- @@ forbidden_function | reset statistics
SELECT pg_stat_reset()
-- @@ forbidden_function | promote a standby
SELECT pg_promote()
-- @@ forbidden_function | start a backup
SELECT pg_backup_start('x')
-- @@ forbidden_function | log memory contexts
SELECT pg_log_backend_memory_contexts(pg_backend_pid())
-- @@ forbidden_function | adminpack writes files
SELECT pg_file_write('evil', 'x', false)
-- @@ forbidden_function | WAL message
SELECT pg_logical_emit_message(true, 'x', 'y')
-- @@ forbidden_function | import collations
SELECT pg_import_system_collations('pg_catalog')
-- @@ multiple_statements | a DELETE after a SELECT
SELECT 1; DELETE FROM singer
-- @@ multiple_statements | a dollar-quoted semicolon, then a real one
SELECT $$;$$; DROP TABLE singer
-- @@ multiple_statements | a tagged dollar quote, then a real semicolon
SELECT $x$ $$ ; $x$; DROP TABLE singer
-- @@ multiple_statements | an E-string with an escaped quote, then a real one
SELECT E'\';' ; DROP TABLE singer
-- @@ multiple_statements | a backslash is no escape in standard strings
SELECT 'a\'; DELETE FROM singer; --'
-- @@ multiple_statements | a COMMIT, then a write
SELECT 1; COMMIT; DELETE FROM singer
-- @@ multiple_statements | a read-write transaction
COMMIT; BEGIN READ WRITE; DELETE FROM singer
-- @@ multiple_statements | a line comment, then a statement on the next line
SELECT 1 -- comment
; SET ROLE postgres
-- @@ syntax | a typo
SELEC 1
-- @@ syntax | nothing selected
SELECT FROM WHERE
-- @@ syntax | an unterminated string
SELECT 'unterminated
-- @@ syntax | a psql meta-command
\copy singer TO '/tmp/macsql_copy.csv'
-- @@ empty | only a comment
-- DROP TABLE singer
-- @@ forbidden_function | index maintenance: summarize new BRIN ranges (writes index pages in READ ONLY)
SELECT brin_summarize_new_values('singer_pkey')
-- @@ forbidden_function | index maintenance: summarize one BRIN range
SELECT brin_summarize_range('singer_pkey', 0)
-- @@ forbidden_function | index maintenance: desummarize a BRIN range
SELECT brin_desummarize_range('singer_pkey', 0)
-- @@ forbidden_function | index maintenance: flush a GIN pending list
SELECT gin_clean_pending_list('singer_pkey')
-- @@ forbidden_function | index maintenance hidden in WHERE
SELECT name FROM singer WHERE brin_summarize_new_values('singer_pkey') >= 0
-- @@ forbidden_function | crosstab runs SQL given as text
SELECT * FROM crosstab('SELECT pg_terminate_backend(pid), 1, 1 FROM pg_stat_activity') AS t(a bool, b int)
-- @@ forbidden_function | crosstab with a category query
SELECT * FROM crosstab('SELECT 1, 1, 1', 'SELECT 1') AS t(a int, b int)
-- @@ forbidden_function | connectby runs SQL on a named table
SELECT * FROM connectby('singer', 'singer_id', 'age', '1', 0) AS t(a text, b text, c int)
-- @@ forbidden_function | xpath_table runs SQL built from its arguments
SELECT * FROM xpath_table('singer_id', 'name', 'singer; SELECT pg_terminate_backend(1)', '/a', 'true') AS t(k text, a text)
-- @@ forbidden_function | crosstab inside a LATERAL join
SELECT s.name FROM singer AS s, LATERAL crosstab('SELECT 1, 1, 1') AS t(a int, b int)
-- @@ forbidden_function | a schema-qualified user function shadowing a built-in
SELECT public.lower(name) FROM singer
-- @@ forbidden_function | reads a server setting
SELECT current_setting('data_directory')
-- @@ forbidden_function | a sequence read
SELECT currval('singer_singer_id_seq')
-- @@ forbidden_relation | password hashes
SELECT rolname, rolpassword FROM pg_authid
-- @@ forbidden_relation | password hashes, qualified
SELECT * FROM pg_catalog.pg_authid
-- @@ forbidden_relation | pg_hba.conf through a view
SELECT * FROM pg_hba_file_rules
-- @@ forbidden_relation | postgresql.conf through a view
SELECT * FROM pg_file_settings
-- @@ forbidden_relation | pg_shadow
SELECT usename, passwd FROM pg_shadow
-- @@ forbidden_relation | other sessions' queries
SELECT pid, query FROM pg_stat_activity
-- @@ forbidden_relation | a catalog in a subquery
SELECT name FROM singer WHERE name IN (SELECT rolname FROM pg_roles)
-- @@ forbidden_relation | a CTE that reads the catalog it shadows
WITH pg_authid AS (SELECT * FROM pg_authid) SELECT * FROM pg_authid
-- @@ forbidden_relation | a quoted CTE name does not shadow the catalog
WITH "PG_AUTHID" AS (SELECT 1) SELECT * FROM pg_authid
-- @@ forbidden_relation | privileges through information_schema
SELECT * FROM information_schema.role_table_grants
-- @@ forbidden_relation | a three-part name into another database
SELECT * FROM postgres.pg_catalog.pg_authid
-- @@ forbidden_relation | the TOAST schema
SELECT * FROM pg_toast.pg_toast_1262
