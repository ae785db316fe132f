-- Hostile SQL for the MySQL/MariaDB dialect, written for macsql's tests (tests/test_mysql_backend.py).
-- Every entry must be refused by the guard with the expected kind, and running it through
-- execute_sql against Spider's concert_singer loaded into MariaDB must change nothing.
-- Format: an entry starts with a line "-- @@ <expected guard kind> | <what it tries>"; its SQL
-- is every following line up to the next such line.
-- @@ write | delete every row
DELETE FROM singer
-- @@ write | update every row
UPDATE singer SET name = 'pwned'
-- @@ write | insert a row
INSERT INTO singer (singer_id, name) VALUES (100, 'x')
-- @@ write | INSERT IGNORE
INSERT IGNORE INTO singer (singer_id) VALUES (1)
-- @@ write | INSERT ... ON DUPLICATE KEY UPDATE
INSERT INTO singer (singer_id) VALUES (1) ON DUPLICATE KEY UPDATE name = 'x'
-- @@ write | REPLACE INTO
REPLACE INTO singer (singer_id, name) VALUES (1, 'x')
-- @@ write | INSERT ... SELECT
INSERT INTO singer_in_concert SELECT * FROM singer_in_concert
-- @@ write | INSERT ... SET
INSERT INTO stadium SET stadium_id = 99
-- @@ write | multi-table DELETE
DELETE s FROM singer s JOIN concert c ON 1 = 1
-- @@ write | multi-table UPDATE
UPDATE singer s JOIN concert c ON 1 = 1 SET s.age = 0
-- @@ write | DELETE with LIMIT
DELETE FROM singer LIMIT 1
-- @@ write | UPDATE with ORDER BY
UPDATE singer SET age = age + 1 ORDER BY age
-- @@ write | lower-case delete
delete from stadium where 1 = 1
-- @@ write | TRUNCATE
TRUNCATE singer
-- @@ write | TRUNCATE TABLE
TRUNCATE TABLE concert
-- @@ write | a CTE in front of a DELETE
WITH s AS (SELECT 1) DELETE FROM singer
-- @@ write | a CTE in front of an UPDATE
WITH s AS (SELECT 1 AS one) UPDATE singer SET age = (SELECT one FROM s)
-- @@ write | SELECT ... INTO OUTFILE
SELECT * FROM singer INTO OUTFILE '/tmp/macsql_out.txt'
-- @@ write | SELECT ... INTO DUMPFILE
SELECT name FROM singer LIMIT 1 INTO DUMPFILE '/tmp/macsql_dump.bin'
-- @@ write | INTO OUTFILE before FROM
SELECT name INTO OUTFILE '/tmp/macsql_o2.txt' FROM singer
-- @@ write | INTO OUTFILE with options
SELECT * FROM singer INTO OUTFILE '/tmp/macsql_o3.csv' FIELDS TERMINATED BY ','
-- @@ write | SELECT ... INTO a variable
SELECT name INTO @v FROM singer LIMIT 1
-- @@ forbidden_command | LOAD DATA INFILE
LOAD DATA INFILE '/etc/passwd' INTO TABLE singer
-- @@ forbidden_command | LOAD DATA LOCAL INFILE
LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE singer
-- @@ forbidden_command | LOAD XML
LOAD XML INFILE '/tmp/macsql_x.xml' INTO TABLE singer
-- @@ ddl | drop a table
DROP TABLE singer
-- @@ ddl | drop a database
DROP DATABASE concert_singer
-- @@ ddl | drop if exists
DROP TABLE IF EXISTS concert
-- @@ ddl | create a table
CREATE TABLE evil (a INT)
-- @@ ddl | create table as select
CREATE TABLE copy_of AS SELECT * FROM singer
-- @@ ddl | create a temporary table
CREATE TEMPORARY TABLE t AS SELECT 1
-- @@ ddl | create a view
CREATE VIEW v AS SELECT * FROM singer
-- @@ ddl | create a procedure
CREATE PROCEDURE p() DELETE FROM singer
-- @@ ddl | create a function
CREATE FUNCTION f() RETURNS INT RETURN 1
-- @@ ddl | create a trigger
CREATE TRIGGER t BEFORE INSERT ON singer FOR EACH ROW SET @x = 1
-- @@ ddl | create an event
CREATE EVENT e ON SCHEDULE EVERY 1 SECOND DO DELETE FROM singer
-- @@ ddl | create a user
CREATE USER 'evil'@'%' IDENTIFIED BY 'x'
-- @@ ddl | create an index
CREATE INDEX i ON singer (age)
-- @@ ddl | create a database
CREATE DATABASE evil
-- @@ ddl | alter table
ALTER TABLE singer ADD COLUMN pwned INT
-- @@ ddl | alter user
ALTER USER 'macsql'@'127.0.0.1' IDENTIFIED BY 'x'
-- @@ ddl | rename table
RENAME TABLE singer TO gone
-- @@ ddl | grant
GRANT ALL ON *.* TO 'evil'@'%'
-- @@ ddl | revoke
REVOKE SELECT ON *.* FROM 'macsql'@'127.0.0.1'
-- @@ ddl | drop user
DROP USER 'macsql'@'127.0.0.1'
-- @@ ddl | optimize table
OPTIMIZE TABLE singer
-- @@ forbidden_command | HANDLER OPEN
HANDLER singer OPEN
-- @@ forbidden_command | HANDLER READ
HANDLER singer READ FIRST
-- @@ forbidden_command | DO SLEEP
DO SLEEP(10)
-- @@ forbidden_command | DO GET_LOCK
DO GET_LOCK('x', 10)
-- @@ forbidden_command | CALL a procedure
CALL p()
-- @@ forbidden_command | FLUSH
FLUSH PRIVILEGES
-- @@ forbidden_command | FLUSH TABLES WITH READ LOCK
FLUSH TABLES WITH READ LOCK
-- @@ forbidden_command | KILL
KILL 1
-- @@ forbidden_command | KILL QUERY
KILL QUERY 1
-- @@ forbidden_command | SHUTDOWN
SHUTDOWN
-- @@ forbidden_command | INSTALL PLUGIN
INSTALL PLUGIN x SONAME 'x.so'
-- @@ forbidden_command | UNINSTALL PLUGIN
UNINSTALL PLUGIN x
-- @@ forbidden_command | PURGE logs
PURGE BINARY LOGS BEFORE NOW()
-- @@ forbidden_command | ANALYZE TABLE
ANALYZE TABLE singer
-- @@ forbidden_command | CHECK TABLE
CHECK TABLE singer
-- @@ forbidden_command | REPAIR TABLE
REPAIR TABLE singer
-- @@ forbidden_command | EXPLAIN
EXPLAIN SELECT * FROM singer
-- @@ forbidden_command | DESCRIBE
DESCRIBE singer
-- @@ forbidden_command | an executable comment
SELECT 1 /*! , SLEEP(10) */
-- @@ forbidden_command | a MariaDB executable comment
SELECT 1 /*M! , SLEEP(10) */
-- @@ forbidden_command | BINLOG
BINLOG 'abc'
-- @@ forbidden_command | RESET MASTER
RESET MASTER
-- @@ forbidden_command | XA START
XA START 'x'
-- @@ forbidden_command | SET a session variable
SET SESSION sql_mode = ''
-- @@ forbidden_command | SET GLOBAL
SET GLOBAL max_connections = 1
-- @@ forbidden_command | SET the transaction writable
SET SESSION TRANSACTION READ WRITE
-- @@ forbidden_command | SET a user variable
SET @x = 1
-- @@ forbidden_command | SET max_statement_time
SET max_statement_time = 0
-- @@ forbidden_command | SET NAMES
SET NAMES latin1
-- @@ session | USE another database
USE mysql
-- @@ session | SHOW GRANTS
SHOW GRANTS
-- @@ session | SHOW TABLES
SHOW TABLES
-- @@ session | PREPARE
PREPARE s FROM 'DELETE FROM singer'
-- @@ session | EXECUTE
EXECUTE s
-- @@ transaction | START TRANSACTION READ WRITE
START TRANSACTION READ WRITE
-- @@ transaction | BEGIN
BEGIN
-- @@ transaction | COMMIT
COMMIT
-- @@ transaction | ROLLBACK
ROLLBACK
-- @@ transaction | SAVEPOINT
SAVEPOINT a
-- @@ forbidden_command | LOCK TABLES
LOCK TABLES singer WRITE
-- @@ locking | SELECT ... FOR UPDATE
SELECT * FROM singer FOR UPDATE
-- @@ locking | LOCK IN SHARE MODE
SELECT * FROM singer LOCK IN SHARE MODE
-- @@ locking | FOR SHARE
SELECT * FROM singer FOR SHARE
-- @@ locking | FOR UPDATE NOWAIT
SELECT * FROM singer FOR UPDATE NOWAIT
-- @@ locking | FOR UPDATE in a subquery
SELECT * FROM (SELECT * FROM singer FOR UPDATE) AS s
-- @@ forbidden_function | SLEEP
SELECT SLEEP(10)
-- @@ forbidden_function | SLEEP in WHERE
SELECT * FROM singer WHERE SLEEP(1) = 0
-- @@ forbidden_function | BENCHMARK
SELECT BENCHMARK(100000000, MD5('x'))
-- @@ forbidden_function | LOAD_FILE
SELECT LOAD_FILE('/etc/passwd')
-- @@ forbidden_function | LOAD_FILE in a subquery
SELECT name FROM singer WHERE name = (SELECT LOAD_FILE('/etc/hostname'))
-- @@ forbidden_function | GET_LOCK
SELECT GET_LOCK('macsql', 10)
-- @@ forbidden_function | RELEASE_LOCK
SELECT RELEASE_LOCK('macsql')
-- @@ forbidden_function | IS_FREE_LOCK
SELECT IS_FREE_LOCK('macsql')
-- @@ forbidden_function | RELEASE_ALL_LOCKS
SELECT RELEASE_ALL_LOCKS()
-- @@ forbidden_function | MASTER_POS_WAIT
SELECT MASTER_POS_WAIT('log', 4, 10)
-- @@ forbidden_function | sys_exec (a UDF)
SELECT sys_exec('rm -rf /')
-- @@ forbidden_function | NEXTVAL
SELECT NEXTVAL(s)
-- @@ forbidden_function | upper-case sleep in a CTE
WITH x AS (SELECT SLEEP(5) AS s) SELECT * FROM x
-- @@ multiple_statements | a query then DROP
SELECT 1; DROP TABLE singer
-- @@ multiple_statements | a query then SET
SELECT 1; SET GLOBAL max_connections = 1
-- @@ multiple_statements | a query then LOAD DATA
SELECT 1; LOAD DATA INFILE '/etc/passwd' INTO TABLE singer
-- @@ syntax | unterminated string
SELECT 'abc FROM singer
-- @@ syntax | gibberish
SELEKT * FROM singer
-- @@ forbidden_function | LOAD_FILE after -- and a no-break space, then in a UNION (issue 26)
SELECT 1 -- .v, LOAD_FILE('/etc/passwd') AS b FROM (SELECT 1 AS v) AS ` `
UNION SELECT LOAD_FILE('/etc/passwd'), 2
-- @@ session | the data directory (issue 26)
SELECT @@datadir
-- @@ session | the host name and the file directory (issue 26)
SELECT @@GLOBAL.hostname, @@secure_file_priv
-- @@ session | a user variable assigned (issue 26)
SELECT @a := name FROM singer
-- @@ unstoppable | a backtracking regular expression on a grown string (issue 26)
SELECT REGEXP_REPLACE(REPEAT('ab', 8000000), '(a|ab)(c|bcd)*(d*)', 'x')
-- @@ unstoppable | an exponential pattern (issue 26)
SELECT name FROM singer WHERE name REGEXP '(a|a)*b'
-- @@ unstoppable | a pattern from the data (issue 26)
SELECT name FROM singer WHERE name REGEXP country
-- @@ forbidden_relation | the mysql schema's password hashes (issue 26)
SELECT * FROM mysql.global_priv
