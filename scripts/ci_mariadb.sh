#!/usr/bin/env bash
# Start a throwaway MariaDB server for macsql's tests and load Spider databases into it.
#
#   scripts/ci_mariadb.sh            install if needed, init, start, load; writes the env file
#   scripts/ci_mariadb.sh destroy    stop it and delete its data directory
#
# Idempotent: a second run finds the running server and reuses it. Afterwards
# `source .ci/mysql.env` exports MACSQL_MYSQL_URL (a mysql:// URL of an admin test user with a
# password, over TCP on 127.0.0.1, which loads and inspects the databases) and
# MACSQL_MYSQL_READER_URL (a user granted SELECT on the loaded databases only: the one macsql
# connects as, since it refuses a user that may write); `tests/mysql_support.py` reads both.
#
# Settings (environment, all optional):
#   MACSQL_MYSQL_PORT       preferred port (default 33069; the next free one is used if taken)
#   MACSQL_MYSQL_BASE       folder for data, socket and log (default ${TMPDIR:-/tmp}/macsql-mariadb)
#   MACSQL_MYSQL_ENV_FILE   where to write the exports (default <repo>/.ci/mysql.env)
#   MACSQL_MYSQL_USER, MACSQL_MYSQL_PASSWORD   the admin test user (default macsql / macsql)
#   MACSQL_MYSQL_READER, MACSQL_MYSQL_READER_PASSWORD   the read-only user (default macsql_reader)
#   MACSQL_MYSQL_DATABASES  Spider db ids to load (default: concert_singer pets_1 car_1)
#   MACSQL_SPIDER_DIR       Spider's folder (default <repo>/../shared/data/spider)
#   PYTHON                  interpreter with macsql installed (default: python, then python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${MACSQL_MYSQL_PORT:-33069}"
BASE="${MACSQL_MYSQL_BASE:-${TMPDIR:-/tmp}/macsql-mariadb}"
DATA="$BASE/data"
SOCK="$BASE/mysqld.sock"
PIDFILE="$BASE/mysqld.pid"
LOG="$BASE/mariadb.log"
ENV_FILE="${MACSQL_MYSQL_ENV_FILE:-$ROOT/.ci/mysql.env}"
DB_USER="${MACSQL_MYSQL_USER:-macsql}"
DB_PASS="${MACSQL_MYSQL_PASSWORD:-macsql}"
READER="${MACSQL_MYSQL_READER:-macsql_reader}"
READER_PASS="${MACSQL_MYSQL_READER_PASSWORD:-macsql_reader}"
SPIDER_DIR="${MACSQL_SPIDER_DIR:-$ROOT/../shared/data/spider}"
DATABASES="${MACSQL_MYSQL_DATABASES:-concert_singer pets_1 car_1}"
ACTION="${1:-start}"

log() { echo "[ci_mariadb] $*" >&2; }
die() { log "error: $*"; exit 1; }

running() { [[ -f "$PIDFILE" ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "$ACTION" in
    destroy)
        if running; then
            kill "$(cat "$PIDFILE")" 2>/dev/null || true
            for _ in $(seq 1 50); do running || break; sleep 0.2; done
        fi
        rm -rf "$BASE"; rm -f "$ENV_FILE"; log "destroyed $BASE"
        exit 0 ;;
    start) ;;
    *) die "unknown action '$ACTION' (start, destroy)" ;;
esac

if ! command -v mariadbd >/dev/null && [[ ! -x /usr/sbin/mariadbd ]]; then
    [[ "$(id -u)" == 0 ]] || die "MariaDB is not installed and we are not root to install it"
    command -v apt-get >/dev/null || die "MariaDB is not installed and there is no apt-get"
    log "installing MariaDB from the Debian packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends mariadb-server >/dev/null
fi
MARIADBD="$(command -v mariadbd || echo /usr/sbin/mariadbd)"

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
mkdir -p "$BASE"
RUN_USER="$(id -un)"
if [[ "$(id -u)" == 0 ]]; then
    RUN_USER=mysql
    id "$RUN_USER" >/dev/null 2>&1 \
        || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
    chmod o+x "$(dirname "$BASE")" 2>/dev/null || true
fi
chown "$RUN_USER" "$BASE"
# mariadb-install-db gives root and the installing OS user socket authentication.
ADMIN="$(id -un)"

if [[ ! -d "$DATA/mysql" ]]; then
    log "initialising a MariaDB data directory in $DATA"
    mariadb-install-db --user="$RUN_USER" --datadir="$DATA" --auth-root-authentication-method=socket \
        --skip-test-db >/dev/null
fi

if running; then
    PORT="$(cat "$BASE/port")"
    log "already running on 127.0.0.1:$PORT"
else
    for _ in $(seq 1 100); do port_in_use "$PORT" || break; PORT=$((PORT + 1)); done
    port_in_use "$PORT" && die "no free port found"
    log "starting on 127.0.0.1:$PORT (log: $LOG)"
    # lower_case_table_names=1: table names match case-insensitively, as in SQLite (Spider's
    # SQL writes `FROM Singer` for a table `singer`).
    "$MARIADBD" --no-defaults --user="$RUN_USER" --datadir="$DATA" --socket="$SOCK" \
        --pid-file="$PIDFILE" --port="$PORT" --bind-address=127.0.0.1 --log-error="$LOG" \
        --lower-case-table-names=1 --skip-log-bin --innodb-flush-log-at-trx-commit=0 \
        --innodb-buffer-pool-size=64M --performance-schema=OFF --max-connections=200 \
        >/dev/null 2>&1 &
    for _ in $(seq 1 150); do
        [[ -S "$SOCK" ]] && mariadb --socket="$SOCK" -u"$ADMIN" -e "SELECT 1" >/dev/null 2>&1 && break
        sleep 0.2
    done
    mariadb --socket="$SOCK" -u"$ADMIN" -e "SELECT 1" >/dev/null 2>&1 \
        || { tail -n 30 "$LOG" >&2 || true; die "MariaDB did not start"; }
    echo "$PORT" > "$BASE/port"
fi

# The admin user: all privileges (it loads databases and grants SELECT on them); the reader:
# no privilege but the SELECTs the loader grants. Both with passwords, reached over TCP.
PASS_SQL="${DB_PASS//\'/\'\'}"
READER_PASS_SQL="${READER_PASS//\'/\'\'}"
mariadb --socket="$SOCK" -u"$ADMIN" <<SQL
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$PASS_SQL';
ALTER USER '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$PASS_SQL';
GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS '$READER'@'127.0.0.1' IDENTIFIED BY '$READER_PASS_SQL';
ALTER USER '$READER'@'127.0.0.1' IDENTIFIED BY '$READER_PASS_SQL';
FLUSH PRIVILEGES;
SQL

URL="mysql://${DB_USER}:${DB_PASS}@127.0.0.1:${PORT}/"
READER_URL="mysql://${READER}:${READER_PASS}@127.0.0.1:${PORT}/"
mkdir -p "$(dirname "$ENV_FILE")"
cat > "$ENV_FILE" <<ENVEOF
# Written by scripts/ci_mariadb.sh: the test MariaDB server.
export MACSQL_MYSQL_URL='$URL'
export MACSQL_MYSQL_READER_URL='$READER_URL'
ENVEOF
log "wrote $ENV_FILE"

if [[ -z "${PYTHON:-}" ]]; then
    PYTHON="$(command -v python || command -v python3 || true)"
fi
# shellcheck disable=SC2086
"$PYTHON" -m macsql.cli.main load --to "$URL" --spider-dir "$SPIDER_DIR" \
    --grant-select-to "$READER@127.0.0.1" $DATABASES
echo "MACSQL_MYSQL_URL=$URL"
echo "MACSQL_MYSQL_READER_URL=$READER_URL"
