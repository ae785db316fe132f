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
-- @@ forbidden_relation | a cast to regclass looks relations up in the catalog (issue 26)
SELECT 'pg_authid'::regclass
-- @@ forbidden_relation | a loop of integers cast to regrole lists every role (issue 26)
SELECT g::regrole::text FROM generate_series(1, 20000) g
-- @@ forbidden_relation | a cast to regprocedure (issue 26)
SELECT CAST(1 AS regprocedure)
-- @@ unstoppable | md5 of 1 GB: deaf to a cancel (issue 26)
SELECT md5(repeat('x', 1000000000))
-- @@ unstoppable | lpad to a billion characters (issue 26)
SELECT lpad('x', 1000000000)
-- @@ unstoppable | a format() width of a billion (issue 26)
SELECT format('%1000000000s', 'x')
-- @@ too_complex | a chain of 600 CTEs (issue 26)
WITH c0 AS (SELECT 1 AS x), c1 AS (SELECT x FROM c0), c2 AS (SELECT x FROM c1), c3 AS (SELECT x FROM c2), c4 AS (SELECT x FROM c3), c5 AS (SELECT x FROM c4), c6 AS (SELECT x FROM c5), c7 AS (SELECT x FROM c6), c8 AS (SELECT x FROM c7), c9 AS (SELECT x FROM c8), c10 AS (SELECT x FROM c9), c11 AS (SELECT x FROM c10), c12 AS (SELECT x FROM c11), c13 AS (SELECT x FROM c12), c14 AS (SELECT x FROM c13), c15 AS (SELECT x FROM c14), c16 AS (SELECT x FROM c15), c17 AS (SELECT x FROM c16), c18 AS (SELECT x FROM c17), c19 AS (SELECT x FROM c18), c20 AS (SELECT x FROM c19), c21 AS (SELECT x FROM c20), c22 AS (SELECT x FROM c21), c23 AS (SELECT x FROM c22), c24 AS (SELECT x FROM c23), c25 AS (SELECT x FROM c24), c26 AS (SELECT x FROM c25), c27 AS (SELECT x FROM c26), c28 AS (SELECT x FROM c27), c29 AS (SELECT x FROM c28), c30 AS (SELECT x FROM c29), c31 AS (SELECT x FROM c30), c32 AS (SELECT x FROM c31), c33 AS (SELECT x FROM c32), c34 AS (SELECT x FROM c33), c35 AS (SELECT x FROM c34), c36 AS (SELECT x FROM c35), c37 AS (SELECT x FROM c36), c38 AS (SELECT x FROM c37), c39 AS (SELECT x FROM c38), c40 AS (SELECT x FROM c39), c41 AS (SELECT x FROM c40), c42 AS (SELECT x FROM c41), c43 AS (SELECT x FROM c42), c44 AS (SELECT x FROM c43), c45 AS (SELECT x FROM c44), c46 AS (SELECT x FROM c45), c47 AS (SELECT x FROM c46), c48 AS (SELECT x FROM c47), c49 AS (SELECT x FROM c48), c50 AS (SELECT x FROM c49), c51 AS (SELECT x FROM c50), c52 AS (SELECT x FROM c51), c53 AS (SELECT x FROM c52), c54 AS (SELECT x FROM c53), c55 AS (SELECT x FROM c54), c56 AS (SELECT x FROM c55), c57 AS (SELECT x FROM c56), c58 AS (SELECT x FROM c57), c59 AS (SELECT x FROM c58), c60 AS (SELECT x FROM c59), c61 AS (SELECT x FROM c60), c62 AS (SELECT x FROM c61), c63 AS (SELECT x FROM c62), c64 AS (SELECT x FROM c63), c65 AS (SELECT x FROM c64), c66 AS (SELECT x FROM c65), c67 AS (SELECT x FROM c66), c68 AS (SELECT x FROM c67), c69 AS (SELECT x FROM c68), c70 AS (SELECT x FROM c69), c71 AS (SELECT x FROM c70), c72 AS (SELECT x FROM c71), c73 AS (SELECT x FROM c72), c74 AS (SELECT x FROM c73), c75 AS (SELECT x FROM c74), c76 AS (SELECT x FROM c75), c77 AS (SELECT x FROM c76), c78 AS (SELECT x FROM c77), c79 AS (SELECT x FROM c78), c80 AS (SELECT x FROM c79), c81 AS (SELECT x FROM c80), c82 AS (SELECT x FROM c81), c83 AS (SELECT x FROM c82), c84 AS (SELECT x FROM c83), c85 AS (SELECT x FROM c84), c86 AS (SELECT x FROM c85), c87 AS (SELECT x FROM c86), c88 AS (SELECT x FROM c87), c89 AS (SELECT x FROM c88), c90 AS (SELECT x FROM c89), c91 AS (SELECT x FROM c90), c92 AS (SELECT x FROM c91), c93 AS (SELECT x FROM c92), c94 AS (SELECT x FROM c93), c95 AS (SELECT x FROM c94), c96 AS (SELECT x FROM c95), c97 AS (SELECT x FROM c96), c98 AS (SELECT x FROM c97), c99 AS (SELECT x FROM c98), c100 AS (SELECT x FROM c99), c101 AS (SELECT x FROM c100), c102 AS (SELECT x FROM c101), c103 AS (SELECT x FROM c102), c104 AS (SELECT x FROM c103), c105 AS (SELECT x FROM c104), c106 AS (SELECT x FROM c105), c107 AS (SELECT x FROM c106), c108 AS (SELECT x FROM c107), c109 AS (SELECT x FROM c108), c110 AS (SELECT x FROM c109), c111 AS (SELECT x FROM c110), c112 AS (SELECT x FROM c111), c113 AS (SELECT x FROM c112), c114 AS (SELECT x FROM c113), c115 AS (SELECT x FROM c114), c116 AS (SELECT x FROM c115), c117 AS (SELECT x FROM c116), c118 AS (SELECT x FROM c117), c119 AS (SELECT x FROM c118), c120 AS (SELECT x FROM c119), c121 AS (SELECT x FROM c120), c122 AS (SELECT x FROM c121), c123 AS (SELECT x FROM c122), c124 AS (SELECT x FROM c123), c125 AS (SELECT x FROM c124), c126 AS (SELECT x FROM c125), c127 AS (SELECT x FROM c126), c128 AS (SELECT x FROM c127), c129 AS (SELECT x FROM c128), c130 AS (SELECT x FROM c129), c131 AS (SELECT x FROM c130), c132 AS (SELECT x FROM c131), c133 AS (SELECT x FROM c132), c134 AS (SELECT x FROM c133), c135 AS (SELECT x FROM c134), c136 AS (SELECT x FROM c135), c137 AS (SELECT x FROM c136), c138 AS (SELECT x FROM c137), c139 AS (SELECT x FROM c138), c140 AS (SELECT x FROM c139), c141 AS (SELECT x FROM c140), c142 AS (SELECT x FROM c141), c143 AS (SELECT x FROM c142), c144 AS (SELECT x FROM c143), c145 AS (SELECT x FROM c144), c146 AS (SELECT x FROM c145), c147 AS (SELECT x FROM c146), c148 AS (SELECT x FROM c147), c149 AS (SELECT x FROM c148), c150 AS (SELECT x FROM c149), c151 AS (SELECT x FROM c150), c152 AS (SELECT x FROM c151), c153 AS (SELECT x FROM c152), c154 AS (SELECT x FROM c153), c155 AS (SELECT x FROM c154), c156 AS (SELECT x FROM c155), c157 AS (SELECT x FROM c156), c158 AS (SELECT x FROM c157), c159 AS (SELECT x FROM c158), c160 AS (SELECT x FROM c159), c161 AS (SELECT x FROM c160), c162 AS (SELECT x FROM c161), c163 AS (SELECT x FROM c162), c164 AS (SELECT x FROM c163), c165 AS (SELECT x FROM c164), c166 AS (SELECT x FROM c165), c167 AS (SELECT x FROM c166), c168 AS (SELECT x FROM c167), c169 AS (SELECT x FROM c168), c170 AS (SELECT x FROM c169), c171 AS (SELECT x FROM c170), c172 AS (SELECT x FROM c171), c173 AS (SELECT x FROM c172), c174 AS (SELECT x FROM c173), c175 AS (SELECT x FROM c174), c176 AS (SELECT x FROM c175), c177 AS (SELECT x FROM c176), c178 AS (SELECT x FROM c177), c179 AS (SELECT x FROM c178), c180 AS (SELECT x FROM c179), c181 AS (SELECT x FROM c180), c182 AS (SELECT x FROM c181), c183 AS (SELECT x FROM c182), c184 AS (SELECT x FROM c183), c185 AS (SELECT x FROM c184), c186 AS (SELECT x FROM c185), c187 AS (SELECT x FROM c186), c188 AS (SELECT x FROM c187), c189 AS (SELECT x FROM c188), c190 AS (SELECT x FROM c189), c191 AS (SELECT x FROM c190), c192 AS (SELECT x FROM c191), c193 AS (SELECT x FROM c192), c194 AS (SELECT x FROM c193), c195 AS (SELECT x FROM c194), c196 AS (SELECT x FROM c195), c197 AS (SELECT x FROM c196), c198 AS (SELECT x FROM c197), c199 AS (SELECT x FROM c198), c200 AS (SELECT x FROM c199), c201 AS (SELECT x FROM c200), c202 AS (SELECT x FROM c201), c203 AS (SELECT x FROM c202), c204 AS (SELECT x FROM c203), c205 AS (SELECT x FROM c204), c206 AS (SELECT x FROM c205), c207 AS (SELECT x FROM c206), c208 AS (SELECT x FROM c207), c209 AS (SELECT x FROM c208), c210 AS (SELECT x FROM c209), c211 AS (SELECT x FROM c210), c212 AS (SELECT x FROM c211), c213 AS (SELECT x FROM c212), c214 AS (SELECT x FROM c213), c215 AS (SELECT x FROM c214), c216 AS (SELECT x FROM c215), c217 AS (SELECT x FROM c216), c218 AS (SELECT x FROM c217), c219 AS (SELECT x FROM c218), c220 AS (SELECT x FROM c219), c221 AS (SELECT x FROM c220), c222 AS (SELECT x FROM c221), c223 AS (SELECT x FROM c222), c224 AS (SELECT x FROM c223), c225 AS (SELECT x FROM c224), c226 AS (SELECT x FROM c225), c227 AS (SELECT x FROM c226), c228 AS (SELECT x FROM c227), c229 AS (SELECT x FROM c228), c230 AS (SELECT x FROM c229), c231 AS (SELECT x FROM c230), c232 AS (SELECT x FROM c231), c233 AS (SELECT x FROM c232), c234 AS (SELECT x FROM c233), c235 AS (SELECT x FROM c234), c236 AS (SELECT x FROM c235), c237 AS (SELECT x FROM c236), c238 AS (SELECT x FROM c237), c239 AS (SELECT x FROM c238), c240 AS (SELECT x FROM c239), c241 AS (SELECT x FROM c240), c242 AS (SELECT x FROM c241), c243 AS (SELECT x FROM c242), c244 AS (SELECT x FROM c243), c245 AS (SELECT x FROM c244), c246 AS (SELECT x FROM c245), c247 AS (SELECT x FROM c246), c248 AS (SELECT x FROM c247), c249 AS (SELECT x FROM c248), c250 AS (SELECT x FROM c249), c251 AS (SELECT x FROM c250), c252 AS (SELECT x FROM c251), c253 AS (SELECT x FROM c252), c254 AS (SELECT x FROM c253), c255 AS (SELECT x FROM c254), c256 AS (SELECT x FROM c255), c257 AS (SELECT x FROM c256), c258 AS (SELECT x FROM c257), c259 AS (SELECT x FROM c258), c260 AS (SELECT x FROM c259), c261 AS (SELECT x FROM c260), c262 AS (SELECT x FROM c261), c263 AS (SELECT x FROM c262), c264 AS (SELECT x FROM c263), c265 AS (SELECT x FROM c264), c266 AS (SELECT x FROM c265), c267 AS (SELECT x FROM c266), c268 AS (SELECT x FROM c267), c269 AS (SELECT x FROM c268), c270 AS (SELECT x FROM c269), c271 AS (SELECT x FROM c270), c272 AS (SELECT x FROM c271), c273 AS (SELECT x FROM c272), c274 AS (SELECT x FROM c273), c275 AS (SELECT x FROM c274), c276 AS (SELECT x FROM c275), c277 AS (SELECT x FROM c276), c278 AS (SELECT x FROM c277), c279 AS (SELECT x FROM c278), c280 AS (SELECT x FROM c279), c281 AS (SELECT x FROM c280), c282 AS (SELECT x FROM c281), c283 AS (SELECT x FROM c282), c284 AS (SELECT x FROM c283), c285 AS (SELECT x FROM c284), c286 AS (SELECT x FROM c285), c287 AS (SELECT x FROM c286), c288 AS (SELECT x FROM c287), c289 AS (SELECT x FROM c288), c290 AS (SELECT x FROM c289), c291 AS (SELECT x FROM c290), c292 AS (SELECT x FROM c291), c293 AS (SELECT x FROM c292), c294 AS (SELECT x FROM c293), c295 AS (SELECT x FROM c294), c296 AS (SELECT x FROM c295), c297 AS (SELECT x FROM c296), c298 AS (SELECT x FROM c297), c299 AS (SELECT x FROM c298), c300 AS (SELECT x FROM c299), c301 AS (SELECT x FROM c300), c302 AS (SELECT x FROM c301), c303 AS (SELECT x FROM c302), c304 AS (SELECT x FROM c303), c305 AS (SELECT x FROM c304), c306 AS (SELECT x FROM c305), c307 AS (SELECT x FROM c306), c308 AS (SELECT x FROM c307), c309 AS (SELECT x FROM c308), c310 AS (SELECT x FROM c309), c311 AS (SELECT x FROM c310), c312 AS (SELECT x FROM c311), c313 AS (SELECT x FROM c312), c314 AS (SELECT x FROM c313), c315 AS (SELECT x FROM c314), c316 AS (SELECT x FROM c315), c317 AS (SELECT x FROM c316), c318 AS (SELECT x FROM c317), c319 AS (SELECT x FROM c318), c320 AS (SELECT x FROM c319), c321 AS (SELECT x FROM c320), c322 AS (SELECT x FROM c321), c323 AS (SELECT x FROM c322), c324 AS (SELECT x FROM c323), c325 AS (SELECT x FROM c324), c326 AS (SELECT x FROM c325), c327 AS (SELECT x FROM c326), c328 AS (SELECT x FROM c327), c329 AS (SELECT x FROM c328), c330 AS (SELECT x FROM c329), c331 AS (SELECT x FROM c330), c332 AS (SELECT x FROM c331), c333 AS (SELECT x FROM c332), c334 AS (SELECT x FROM c333), c335 AS (SELECT x FROM c334), c336 AS (SELECT x FROM c335), c337 AS (SELECT x FROM c336), c338 AS (SELECT x FROM c337), c339 AS (SELECT x FROM c338), c340 AS (SELECT x FROM c339), c341 AS (SELECT x FROM c340), c342 AS (SELECT x FROM c341), c343 AS (SELECT x FROM c342), c344 AS (SELECT x FROM c343), c345 AS (SELECT x FROM c344), c346 AS (SELECT x FROM c345), c347 AS (SELECT x FROM c346), c348 AS (SELECT x FROM c347), c349 AS (SELECT x FROM c348), c350 AS (SELECT x FROM c349), c351 AS (SELECT x FROM c350), c352 AS (SELECT x FROM c351), c353 AS (SELECT x FROM c352), c354 AS (SELECT x FROM c353), c355 AS (SELECT x FROM c354), c356 AS (SELECT x FROM c355), c357 AS (SELECT x FROM c356), c358 AS (SELECT x FROM c357), c359 AS (SELECT x FROM c358), c360 AS (SELECT x FROM c359), c361 AS (SELECT x FROM c360), c362 AS (SELECT x FROM c361), c363 AS (SELECT x FROM c362), c364 AS (SELECT x FROM c363), c365 AS (SELECT x FROM c364), c366 AS (SELECT x FROM c365), c367 AS (SELECT x FROM c366), c368 AS (SELECT x FROM c367), c369 AS (SELECT x FROM c368), c370 AS (SELECT x FROM c369), c371 AS (SELECT x FROM c370), c372 AS (SELECT x FROM c371), c373 AS (SELECT x FROM c372), c374 AS (SELECT x FROM c373), c375 AS (SELECT x FROM c374), c376 AS (SELECT x FROM c375), c377 AS (SELECT x FROM c376), c378 AS (SELECT x FROM c377), c379 AS (SELECT x FROM c378), c380 AS (SELECT x FROM c379), c381 AS (SELECT x FROM c380), c382 AS (SELECT x FROM c381), c383 AS (SELECT x FROM c382), c384 AS (SELECT x FROM c383), c385 AS (SELECT x FROM c384), c386 AS (SELECT x FROM c385), c387 AS (SELECT x FROM c386), c388 AS (SELECT x FROM c387), c389 AS (SELECT x FROM c388), c390 AS (SELECT x FROM c389), c391 AS (SELECT x FROM c390), c392 AS (SELECT x FROM c391), c393 AS (SELECT x FROM c392), c394 AS (SELECT x FROM c393), c395 AS (SELECT x FROM c394), c396 AS (SELECT x FROM c395), c397 AS (SELECT x FROM c396), c398 AS (SELECT x FROM c397), c399 AS (SELECT x FROM c398), c400 AS (SELECT x FROM c399), c401 AS (SELECT x FROM c400), c402 AS (SELECT x FROM c401), c403 AS (SELECT x FROM c402), c404 AS (SELECT x FROM c403), c405 AS (SELECT x FROM c404), c406 AS (SELECT x FROM c405), c407 AS (SELECT x FROM c406), c408 AS (SELECT x FROM c407), c409 AS (SELECT x FROM c408), c410 AS (SELECT x FROM c409), c411 AS (SELECT x FROM c410), c412 AS (SELECT x FROM c411), c413 AS (SELECT x FROM c412), c414 AS (SELECT x FROM c413), c415 AS (SELECT x FROM c414), c416 AS (SELECT x FROM c415), c417 AS (SELECT x FROM c416), c418 AS (SELECT x FROM c417), c419 AS (SELECT x FROM c418), c420 AS (SELECT x FROM c419), c421 AS (SELECT x FROM c420), c422 AS (SELECT x FROM c421), c423 AS (SELECT x FROM c422), c424 AS (SELECT x FROM c423), c425 AS (SELECT x FROM c424), c426 AS (SELECT x FROM c425), c427 AS (SELECT x FROM c426), c428 AS (SELECT x FROM c427), c429 AS (SELECT x FROM c428), c430 AS (SELECT x FROM c429), c431 AS (SELECT x FROM c430), c432 AS (SELECT x FROM c431), c433 AS (SELECT x FROM c432), c434 AS (SELECT x FROM c433), c435 AS (SELECT x FROM c434), c436 AS (SELECT x FROM c435), c437 AS (SELECT x FROM c436), c438 AS (SELECT x FROM c437), c439 AS (SELECT x FROM c438), c440 AS (SELECT x FROM c439), c441 AS (SELECT x FROM c440), c442 AS (SELECT x FROM c441), c443 AS (SELECT x FROM c442), c444 AS (SELECT x FROM c443), c445 AS (SELECT x FROM c444), c446 AS (SELECT x FROM c445), c447 AS (SELECT x FROM c446), c448 AS (SELECT x FROM c447), c449 AS (SELECT x FROM c448), c450 AS (SELECT x FROM c449), c451 AS (SELECT x FROM c450), c452 AS (SELECT x FROM c451), c453 AS (SELECT x FROM c452), c454 AS (SELECT x FROM c453), c455 AS (SELECT x FROM c454), c456 AS (SELECT x FROM c455), c457 AS (SELECT x FROM c456), c458 AS (SELECT x FROM c457), c459 AS (SELECT x FROM c458), c460 AS (SELECT x FROM c459), c461 AS (SELECT x FROM c460), c462 AS (SELECT x FROM c461), c463 AS (SELECT x FROM c462), c464 AS (SELECT x FROM c463), c465 AS (SELECT x FROM c464), c466 AS (SELECT x FROM c465), c467 AS (SELECT x FROM c466), c468 AS (SELECT x FROM c467), c469 AS (SELECT x FROM c468), c470 AS (SELECT x FROM c469), c471 AS (SELECT x FROM c470), c472 AS (SELECT x FROM c471), c473 AS (SELECT x FROM c472), c474 AS (SELECT x FROM c473), c475 AS (SELECT x FROM c474), c476 AS (SELECT x FROM c475), c477 AS (SELECT x FROM c476), c478 AS (SELECT x FROM c477), c479 AS (SELECT x FROM c478), c480 AS (SELECT x FROM c479), c481 AS (SELECT x FROM c480), c482 AS (SELECT x FROM c481), c483 AS (SELECT x FROM c482), c484 AS (SELECT x FROM c483), c485 AS (SELECT x FROM c484), c486 AS (SELECT x FROM c485), c487 AS (SELECT x FROM c486), c488 AS (SELECT x FROM c487), c489 AS (SELECT x FROM c488), c490 AS (SELECT x FROM c489), c491 AS (SELECT x FROM c490), c492 AS (SELECT x FROM c491), c493 AS (SELECT x FROM c492), c494 AS (SELECT x FROM c493), c495 AS (SELECT x FROM c494), c496 AS (SELECT x FROM c495), c497 AS (SELECT x FROM c496), c498 AS (SELECT x FROM c497), c499 AS (SELECT x FROM c498), c500 AS (SELECT x FROM c499), c501 AS (SELECT x FROM c500), c502 AS (SELECT x FROM c501), c503 AS (SELECT x FROM c502), c504 AS (SELECT x FROM c503), c505 AS (SELECT x FROM c504), c506 AS (SELECT x FROM c505), c507 AS (SELECT x FROM c506), c508 AS (SELECT x FROM c507), c509 AS (SELECT x FROM c508), c510 AS (SELECT x FROM c509), c511 AS (SELECT x FROM c510), c512 AS (SELECT x FROM c511), c513 AS (SELECT x FROM c512), c514 AS (SELECT x FROM c513), c515 AS (SELECT x FROM c514), c516 AS (SELECT x FROM c515), c517 AS (SELECT x FROM c516), c518 AS (SELECT x FROM c517), c519 AS (SELECT x FROM c518), c520 AS (SELECT x FROM c519), c521 AS (SELECT x FROM c520), c522 AS (SELECT x FROM c521), c523 AS (SELECT x FROM c522), c524 AS (SELECT x FROM c523), c525 AS (SELECT x FROM c524), c526 AS (SELECT x FROM c525), c527 AS (SELECT x FROM c526), c528 AS (SELECT x FROM c527), c529 AS (SELECT x FROM c528), c530 AS (SELECT x FROM c529), c531 AS (SELECT x FROM c530), c532 AS (SELECT x FROM c531), c533 AS (SELECT x FROM c532), c534 AS (SELECT x FROM c533), c535 AS (SELECT x FROM c534), c536 AS (SELECT x FROM c535), c537 AS (SELECT x FROM c536), c538 AS (SELECT x FROM c537), c539 AS (SELECT x FROM c538), c540 AS (SELECT x FROM c539), c541 AS (SELECT x FROM c540), c542 AS (SELECT x FROM c541), c543 AS (SELECT x FROM c542), c544 AS (SELECT x FROM c543), c545 AS (SELECT x FROM c544), c546 AS (SELECT x FROM c545), c547 AS (SELECT x FROM c546), c548 AS (SELECT x FROM c547), c549 AS (SELECT x FROM c548), c550 AS (SELECT x FROM c549), c551 AS (SELECT x FROM c550), c552 AS (SELECT x FROM c551), c553 AS (SELECT x FROM c552), c554 AS (SELECT x FROM c553), c555 AS (SELECT x FROM c554), c556 AS (SELECT x FROM c555), c557 AS (SELECT x FROM c556), c558 AS (SELECT x FROM c557), c559 AS (SELECT x FROM c558), c560 AS (SELECT x FROM c559), c561 AS (SELECT x FROM c560), c562 AS (SELECT x FROM c561), c563 AS (SELECT x FROM c562), c564 AS (SELECT x FROM c563), c565 AS (SELECT x FROM c564), c566 AS (SELECT x FROM c565), c567 AS (SELECT x FROM c566), c568 AS (SELECT x FROM c567), c569 AS (SELECT x FROM c568), c570 AS (SELECT x FROM c569), c571 AS (SELECT x FROM c570), c572 AS (SELECT x FROM c571), c573 AS (SELECT x FROM c572), c574 AS (SELECT x FROM c573), c575 AS (SELECT x FROM c574), c576 AS (SELECT x FROM c575), c577 AS (SELECT x FROM c576), c578 AS (SELECT x FROM c577), c579 AS (SELECT x FROM c578), c580 AS (SELECT x FROM c579), c581 AS (SELECT x FROM c580), c582 AS (SELECT x FROM c581), c583 AS (SELECT x FROM c582), c584 AS (SELECT x FROM c583), c585 AS (SELECT x FROM c584), c586 AS (SELECT x FROM c585), c587 AS (SELECT x FROM c586), c588 AS (SELECT x FROM c587), c589 AS (SELECT x FROM c588), c590 AS (SELECT x FROM c589), c591 AS (SELECT x FROM c590), c592 AS (SELECT x FROM c591), c593 AS (SELECT x FROM c592), c594 AS (SELECT x FROM c593), c595 AS (SELECT x FROM c594), c596 AS (SELECT x FROM c595), c597 AS (SELECT x FROM c596), c598 AS (SELECT x FROM c597), c599 AS (SELECT x FROM c598) SELECT x FROM c599
-- @@ too_complex | an IN list of 2,000 values (issue 26)
SELECT name FROM singer WHERE singer_id IN (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164, 165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 243, 244, 245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264, 265, 266, 267, 268, 269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 280, 281, 282, 283, 284, 285, 286, 287, 288, 289, 290, 291, 292, 293, 294, 295, 296, 297, 298, 299, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311, 312, 313, 314, 315, 316, 317, 318, 319, 320, 321, 322, 323, 324, 325, 326, 327, 328, 329, 330, 331, 332, 333, 334, 335, 336, 337, 338, 339, 340, 341, 342, 343, 344, 345, 346, 347, 348, 349, 350, 351, 352, 353, 354, 355, 356, 357, 358, 359, 360, 361, 362, 363, 364, 365, 366, 367, 368, 369, 370, 371, 372, 373, 374, 375, 376, 377, 378, 379, 380, 381, 382, 383, 384, 385, 386, 387, 388, 389, 390, 391, 392, 393, 394, 395, 396, 397, 398, 399, 400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 419, 420, 421, 422, 423, 424, 425, 426, 427, 428, 429, 430, 431, 432, 433, 434, 435, 436, 437, 438, 439, 440, 441, 442, 443, 444, 445, 446, 447, 448, 449, 450, 451, 452, 453, 454, 455, 456, 457, 458, 459, 460, 461, 462, 463, 464, 465, 466, 467, 468, 469, 470, 471, 472, 473, 474, 475, 476, 477, 478, 479, 480, 481, 482, 483, 484, 485, 486, 487, 488, 489, 490, 491, 492, 493, 494, 495, 496, 497, 498, 499, 500, 501, 502, 503, 504, 505, 506, 507, 508, 509, 510, 511, 512, 513, 514, 515, 516, 517, 518, 519, 520, 521, 522, 523, 524, 525, 526, 527, 528, 529, 530, 531, 532, 533, 534, 535, 536, 537, 538, 539, 540, 541, 542, 543, 544, 545, 546, 547, 548, 549, 550, 551, 552, 553, 554, 555, 556, 557, 558, 559, 560, 561, 562, 563, 564, 565, 566, 567, 568, 569, 570, 571, 572, 573, 574, 575, 576, 577, 578, 579, 580, 581, 582, 583, 584, 585, 586, 587, 588, 589, 590, 591, 592, 593, 594, 595, 596, 597, 598, 599, 600, 601, 602, 603, 604, 605, 606, 607, 608, 609, 610, 611, 612, 613, 614, 615, 616, 617, 618, 619, 620, 621, 622, 623, 624, 625, 626, 627, 628, 629, 630, 631, 632, 633, 634, 635, 636, 637, 638, 639, 640, 641, 642, 643, 644, 645, 646, 647, 648, 649, 650, 651, 652, 653, 654, 655, 656, 657, 658, 659, 660, 661, 662, 663, 664, 665, 666, 667, 668, 669, 670, 671, 672, 673, 674, 675, 676, 677, 678, 679, 680, 681, 682, 683, 684, 685, 686, 687, 688, 689, 690, 691, 692, 693, 694, 695, 696, 697, 698, 699, 700, 701, 702, 703, 704, 705, 706, 707, 708, 709, 710, 711, 712, 713, 714, 715, 716, 717, 718, 719, 720, 721, 722, 723, 724, 725, 726, 727, 728, 729, 730, 731, 732, 733, 734, 735, 736, 737, 738, 739, 740, 741, 742, 743, 744, 745, 746, 747, 748, 749, 750, 751, 752, 753, 754, 755, 756, 757, 758, 759, 760, 761, 762, 763, 764, 765, 766, 767, 768, 769, 770, 771, 772, 773, 774, 775, 776, 777, 778, 779, 780, 781, 782, 783, 784, 785, 786, 787, 788, 789, 790, 791, 792, 793, 794, 795, 796, 797, 798, 799, 800, 801, 802, 803, 804, 805, 806, 807, 808, 809, 810, 811, 812, 813, 814, 815, 816, 817, 818, 819, 820, 821, 822, 823, 824, 825, 826, 827, 828, 829, 830, 831, 832, 833, 834, 835, 836, 837, 838, 839, 840, 841, 842, 843, 844, 845, 846, 847, 848, 849, 850, 851, 852, 853, 854, 855, 856, 857, 858, 859, 860, 861, 862, 863, 864, 865, 866, 867, 868, 869, 870, 871, 872, 873, 874, 875, 876, 877, 878, 879, 880, 881, 882, 883, 884, 885, 886, 887, 888, 889, 890, 891, 892, 893, 894, 895, 896, 897, 898, 899, 900, 901, 902, 903, 904, 905, 906, 907, 908, 909, 910, 911, 912, 913, 914, 915, 916, 917, 918, 919, 920, 921, 922, 923, 924, 925, 926, 927, 928, 929, 930, 931, 932, 933, 934, 935, 936, 937, 938, 939, 940, 941, 942, 943, 944, 945, 946, 947, 948, 949, 950, 951, 952, 953, 954, 955, 956, 957, 958, 959, 960, 961, 962, 963, 964, 965, 966, 967, 968, 969, 970, 971, 972, 973, 974, 975, 976, 977, 978, 979, 980, 981, 982, 983, 984, 985, 986, 987, 988, 989, 990, 991, 992, 993, 994, 995, 996, 997, 998, 999, 1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 1015, 1016, 1017, 1018, 1019, 1020, 1021, 1022, 1023, 1024, 1025, 1026, 1027, 1028, 1029, 1030, 1031, 1032, 1033, 1034, 1035, 1036, 1037, 1038, 1039, 1040, 1041, 1042, 1043, 1044, 1045, 1046, 1047, 1048, 1049, 1050, 1051, 1052, 1053, 1054, 1055, 1056, 1057, 1058, 1059, 1060, 1061, 1062, 1063, 1064, 1065, 1066, 1067, 1068, 1069, 1070, 1071, 1072, 1073, 1074, 1075, 1076, 1077, 1078, 1079, 1080, 1081, 1082, 1083, 1084, 1085, 1086, 1087, 1088, 1089, 1090, 1091, 1092, 1093, 1094, 1095, 1096, 1097, 1098, 1099, 1100, 1101, 1102, 1103, 1104, 1105, 1106, 1107, 1108, 1109, 1110, 1111, 1112, 1113, 1114, 1115, 1116, 1117, 1118, 1119, 1120, 1121, 1122, 1123, 1124, 1125, 1126, 1127, 1128, 1129, 1130, 1131, 1132, 1133, 1134, 1135, 1136, 1137, 1138, 1139, 1140, 1141, 1142, 1143, 1144, 1145, 1146, 1147, 1148, 1149, 1150, 1151, 1152, 1153, 1154, 1155, 1156, 1157, 1158, 1159, 1160, 1161, 1162, 1163, 1164, 1165, 1166, 1167, 1168, 1169, 1170, 1171, 1172, 1173, 1174, 1175, 1176, 1177, 1178, 1179, 1180, 1181, 1182, 1183, 1184, 1185, 1186, 1187, 1188, 1189, 1190, 1191, 1192, 1193, 1194, 1195, 1196, 1197, 1198, 1199, 1200, 1201, 1202, 1203, 1204, 1205, 1206, 1207, 1208, 1209, 1210, 1211, 1212, 1213, 1214, 1215, 1216, 1217, 1218, 1219, 1220, 1221, 1222, 1223, 1224, 1225, 1226, 1227, 1228, 1229, 1230, 1231, 1232, 1233, 1234, 1235, 1236, 1237, 1238, 1239, 1240, 1241, 1242, 1243, 1244, 1245, 1246, 1247, 1248, 1249, 1250, 1251, 1252, 1253, 1254, 1255, 1256, 1257, 1258, 1259, 1260, 1261, 1262, 1263, 1264, 1265, 1266, 1267, 1268, 1269, 1270, 1271, 1272, 1273, 1274, 1275, 1276, 1277, 1278, 1279, 1280, 1281, 1282, 1283, 1284, 1285, 1286, 1287, 1288, 1289, 1290, 1291, 1292, 1293, 1294, 1295, 1296, 1297, 1298, 1299, 1300, 1301, 1302, 1303, 1304, 1305, 1306, 1307, 1308, 1309, 1310, 1311, 1312, 1313, 1314, 1315, 1316, 1317, 1318, 1319, 1320, 1321, 1322, 1323, 1324, 1325, 1326, 1327, 1328, 1329, 1330, 1331, 1332, 1333, 1334, 1335, 1336, 1337, 1338, 1339, 1340, 1341, 1342, 1343, 1344, 1345, 1346, 1347, 1348, 1349, 1350, 1351, 1352, 1353, 1354, 1355, 1356, 1357, 1358, 1359, 1360, 1361, 1362, 1363, 1364, 1365, 1366, 1367, 1368, 1369, 1370, 1371, 1372, 1373, 1374, 1375, 1376, 1377, 1378, 1379, 1380, 1381, 1382, 1383, 1384, 1385, 1386, 1387, 1388, 1389, 1390, 1391, 1392, 1393, 1394, 1395, 1396, 1397, 1398, 1399, 1400, 1401, 1402, 1403, 1404, 1405, 1406, 1407, 1408, 1409, 1410, 1411, 1412, 1413, 1414, 1415, 1416, 1417, 1418, 1419, 1420, 1421, 1422, 1423, 1424, 1425, 1426, 1427, 1428, 1429, 1430, 1431, 1432, 1433, 1434, 1435, 1436, 1437, 1438, 1439, 1440, 1441, 1442, 1443, 1444, 1445, 1446, 1447, 1448, 1449, 1450, 1451, 1452, 1453, 1454, 1455, 1456, 1457, 1458, 1459, 1460, 1461, 1462, 1463, 1464, 1465, 1466, 1467, 1468, 1469, 1470, 1471, 1472, 1473, 1474, 1475, 1476, 1477, 1478, 1479, 1480, 1481, 1482, 1483, 1484, 1485, 1486, 1487, 1488, 1489, 1490, 1491, 1492, 1493, 1494, 1495, 1496, 1497, 1498, 1499, 1500, 1501, 1502, 1503, 1504, 1505, 1506, 1507, 1508, 1509, 1510, 1511, 1512, 1513, 1514, 1515, 1516, 1517, 1518, 1519, 1520, 1521, 1522, 1523, 1524, 1525, 1526, 1527, 1528, 1529, 1530, 1531, 1532, 1533, 1534, 1535, 1536, 1537, 1538, 1539, 1540, 1541, 1542, 1543, 1544, 1545, 1546, 1547, 1548, 1549, 1550, 1551, 1552, 1553, 1554, 1555, 1556, 1557, 1558, 1559, 1560, 1561, 1562, 1563, 1564, 1565, 1566, 1567, 1568, 1569, 1570, 1571, 1572, 1573, 1574, 1575, 1576, 1577, 1578, 1579, 1580, 1581, 1582, 1583, 1584, 1585, 1586, 1587, 1588, 1589, 1590, 1591, 1592, 1593, 1594, 1595, 1596, 1597, 1598, 1599, 1600, 1601, 1602, 1603, 1604, 1605, 1606, 1607, 1608, 1609, 1610, 1611, 1612, 1613, 1614, 1615, 1616, 1617, 1618, 1619, 1620, 1621, 1622, 1623, 1624, 1625, 1626, 1627, 1628, 1629, 1630, 1631, 1632, 1633, 1634, 1635, 1636, 1637, 1638, 1639, 1640, 1641, 1642, 1643, 1644, 1645, 1646, 1647, 1648, 1649, 1650, 1651, 1652, 1653, 1654, 1655, 1656, 1657, 1658, 1659, 1660, 1661, 1662, 1663, 1664, 1665, 1666, 1667, 1668, 1669, 1670, 1671, 1672, 1673, 1674, 1675, 1676, 1677, 1678, 1679, 1680, 1681, 1682, 1683, 1684, 1685, 1686, 1687, 1688, 1689, 1690, 1691, 1692, 1693, 1694, 1695, 1696, 1697, 1698, 1699, 1700, 1701, 1702, 1703, 1704, 1705, 1706, 1707, 1708, 1709, 1710, 1711, 1712, 1713, 1714, 1715, 1716, 1717, 1718, 1719, 1720, 1721, 1722, 1723, 1724, 1725, 1726, 1727, 1728, 1729, 1730, 1731, 1732, 1733, 1734, 1735, 1736, 1737, 1738, 1739, 1740, 1741, 1742, 1743, 1744, 1745, 1746, 1747, 1748, 1749, 1750, 1751, 1752, 1753, 1754, 1755, 1756, 1757, 1758, 1759, 1760, 1761, 1762, 1763, 1764, 1765, 1766, 1767, 1768, 1769, 1770, 1771, 1772, 1773, 1774, 1775, 1776, 1777, 1778, 1779, 1780, 1781, 1782, 1783, 1784, 1785, 1786, 1787, 1788, 1789, 1790, 1791, 1792, 1793, 1794, 1795, 1796, 1797, 1798, 1799, 1800, 1801, 1802, 1803, 1804, 1805, 1806, 1807, 1808, 1809, 1810, 1811, 1812, 1813, 1814, 1815, 1816, 1817, 1818, 1819, 1820, 1821, 1822, 1823, 1824, 1825, 1826, 1827, 1828, 1829, 1830, 1831, 1832, 1833, 1834, 1835, 1836, 1837, 1838, 1839, 1840, 1841, 1842, 1843, 1844, 1845, 1846, 1847, 1848, 1849, 1850, 1851, 1852, 1853, 1854, 1855, 1856, 1857, 1858, 1859, 1860, 1861, 1862, 1863, 1864, 1865, 1866, 1867, 1868, 1869, 1870, 1871, 1872, 1873, 1874, 1875, 1876, 1877, 1878, 1879, 1880, 1881, 1882, 1883, 1884, 1885, 1886, 1887, 1888, 1889, 1890, 1891, 1892, 1893, 1894, 1895, 1896, 1897, 1898, 1899, 1900, 1901, 1902, 1903, 1904, 1905, 1906, 1907, 1908, 1909, 1910, 1911, 1912, 1913, 1914, 1915, 1916, 1917, 1918, 1919, 1920, 1921, 1922, 1923, 1924, 1925, 1926, 1927, 1928, 1929, 1930, 1931, 1932, 1933, 1934, 1935, 1936, 1937, 1938, 1939, 1940, 1941, 1942, 1943, 1944, 1945, 1946, 1947, 1948, 1949, 1950, 1951, 1952, 1953, 1954, 1955, 1956, 1957, 1958, 1959, 1960, 1961, 1962, 1963, 1964, 1965, 1966, 1967, 1968, 1969, 1970, 1971, 1972, 1973, 1974, 1975, 1976, 1977, 1978, 1979, 1980, 1981, 1982, 1983, 1984, 1985, 1986, 1987, 1988, 1989, 1990, 1991, 1992, 1993, 1994, 1995, 1996, 1997, 1998, 1999)
