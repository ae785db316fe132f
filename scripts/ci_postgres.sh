#!/usr/bin/env bash
# Start a throwaway PostgreSQL server for macsql's tests and load Spider databases into it.
#
#   scripts/ci_postgres.sh            install if needed, init, start, load; writes the env file
#   scripts/ci_postgres.sh stop       stop the server (the data directory stays, for a fast restart)
#   scripts/ci_postgres.sh destroy    stop it and delete its data directory
#
# Idempotent: a second run finds the running server (or restarts the stopped one), keeps its
# role, and the loader skips databases already loaded from the same SQLite files.
# Afterwards `source .ci/pg.env` exports MACSQL_PG_URL (an SQLAlchemy URL of the maintenance
# database `postgres`, for a superuser role that loads and inspects the test databases) and
# MACSQL_PG_READER_URL (the same for a role that may only read them: the role macsql's own
# connections use, since macsql refuses a role that may write); `tests/pg_support.py` reads both.
#
# Settings (environment, all optional):
#   MACSQL_PG_PORT       preferred port (default 54329; the next free one is used if taken)
#   MACSQL_PG_BASE       folder for data, socket and log (default ${TMPDIR:-/tmp}/macsql-pg)
#   MACSQL_PG_ENV_FILE   where to write the exports (default <repo>/.ci/pg.env)
#   MACSQL_PG_USER, MACSQL_PG_PASSWORD   the admin test role (default macsql / macsql)
#   MACSQL_PG_READER, MACSQL_PG_READER_PASSWORD   the read-only role (default macsql_reader)
#   MACSQL_PG_DATABASES  Spider db ids to load (default: the loader's DEFAULT_SPIDER_DATABASES)
#   MACSQL_SPIDER_DIR    Spider's folder (default $MACSQL_DATA_DIR/spider, else <repo>/../shared/data/spider)
#   PYTHON               interpreter with macsql installed (default: python, then python3)
#   PG_BINDIR            folder of pg_ctl/initdb/postgres, if not the Debian one
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PORT="${MACSQL_PG_PORT:-54329}"
BASE="${MACSQL_PG_BASE:-${TMPDIR:-/tmp}/macsql-pg}"
DATA="$BASE/data"
SOCK="$BASE/sock"
LOG="$BASE/postgres.log"
ENV_FILE="${MACSQL_PG_ENV_FILE:-$ROOT/.ci/pg.env}"
PG_USER="${MACSQL_PG_USER:-macsql}"
PG_PASS="${MACSQL_PG_PASSWORD:-macsql}"
READER="${MACSQL_PG_READER:-macsql_reader}"
READER_PASS="${MACSQL_PG_READER_PASSWORD:-macsql_reader}"
SPIDER_DIR="${MACSQL_SPIDER_DIR:-${MACSQL_DATA_DIR:-$ROOT/../shared/data}/spider}"
ACTION="${1:-start}"

log() { echo "[ci_postgres] $*" >&2; }
die() { log "error: $*"; exit 1; }

find_bindir() {
    if [[ -n "${PG_BINDIR:-}" && -x "$PG_BINDIR/pg_ctl" ]]; then echo "$PG_BINDIR"; return 0; fi
    local dir
    while read -r dir; do
        if [[ -x "$dir/pg_ctl" && -x "$dir/initdb" && -x "$dir/postgres" ]]; then
            echo "$dir"; return 0
        fi
    done < <(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4,4 -n -r)
    if command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
        dir="$(dirname "$(readlink -f "$(command -v pg_ctl)")")"
        [[ -x "$dir/postgres" ]] && { echo "$dir"; return 0; }
    fi
    return 1
}

install_postgres() {
    [[ "$(id -u)" == 0 ]] || die "PostgreSQL is not installed and we are not root to install it"
    command -v apt-get >/dev/null || die "PostgreSQL is not installed and there is no apt-get"
    log "installing PostgreSQL from the Debian packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends postgresql >/dev/null
}

BINDIR="$(find_bindir || true)"
if [[ -z "$BINDIR" ]]; then
    install_postgres
    BINDIR="$(find_bindir)" || die "PostgreSQL binaries not found after installing"
fi
MAJOR="$("$BINDIR/postgres" --version | sed -E 's/[^0-9]*([0-9]+).*/\1/')"

# PostgreSQL refuses to run as root: as root, run the server as the `postgres` system user.
if [[ "$(id -u)" == 0 ]]; then
    RUN_USER=postgres
    id "$RUN_USER" >/dev/null 2>&1 \
        || useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
    as_server() { runuser -u "$RUN_USER" -- "$@"; }
else
    RUN_USER="$(id -un)"
    as_server() { "$@"; }
fi

pg_ctl_() { as_server "$BINDIR/pg_ctl" -D "$DATA" "$@"; }
running() { [[ -f "$DATA/postmaster.pid" ]] && pg_ctl_ status >/dev/null 2>&1; }

case "$ACTION" in
    stop)
        if running; then pg_ctl_ stop -m fast -w >/dev/null; log "stopped"; else log "not running"; fi
        exit 0 ;;
    destroy)
        if running; then pg_ctl_ stop -m immediate -w >/dev/null; fi
        rm -rf "$BASE"; rm -f "$ENV_FILE"; log "destroyed $BASE"
        exit 0 ;;
    start) ;;
    *) die "unknown action '$ACTION' (start, stop, destroy)" ;;
esac

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

mkdir -p "$BASE" "$SOCK"
chown "$RUN_USER" "$BASE" "$SOCK"
chmod 700 "$BASE"
# The server user must be able to reach the base folder (it may sit under a private TMPDIR).
[[ "$(id -u)" == 0 ]] && chmod o+x "$(dirname "$BASE")" 2>/dev/null || true

if [[ -f "$DATA/PG_VERSION" && "$(cat "$DATA/PG_VERSION")" != "$MAJOR" ]]; then
    log "data directory is from PostgreSQL $(cat "$DATA/PG_VERSION"), binaries are $MAJOR: re-initialising"
    if running; then pg_ctl_ stop -m immediate -w >/dev/null || true; fi
    rm -rf "$DATA"
fi

if [[ ! -f "$DATA/PG_VERSION" ]]; then
    log "initialising a PostgreSQL $MAJOR cluster in $DATA"
    as_server "$BINDIR/initdb" -D "$DATA" -U postgres -E UTF8 --no-locale --no-sync \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
fi

if running; then
    PORT="$(sed -n 4p "$DATA/postmaster.pid")"
    log "already running on 127.0.0.1:$PORT"
else
    [[ -f "$BASE/port" ]] && PORT="$(cat "$BASE/port")"
    for _ in $(seq 1 100); do port_in_use "$PORT" || break; PORT=$((PORT + 1)); done
    port_in_use "$PORT" && die "no free port found"
    log "starting on 127.0.0.1:$PORT (log: $LOG)"
    touch "$LOG" && chown "$RUN_USER" "$LOG"
    if ! pg_ctl_ start -w -t 60 -l "$LOG" -o "-c listen_addresses=127.0.0.1 -c port=$PORT \
            -c unix_socket_directories=$SOCK -c fsync=off -c synchronous_commit=off \
            -c full_page_writes=off -c max_connections=200" >/dev/null; then
        tail -n 30 "$LOG" >&2 || true
        die "PostgreSQL did not start"
    fi
fi
echo "$PORT" > "$BASE/port"

# The admin role (a superuser: it creates and loads databases) and the role macsql connects as
# (it may log in and read what the loader grants it, nothing else), both with passwords,
# reached over TCP like any real client.
PASS_SQL="${PG_PASS//\'/\'\'}"
READER_PASS_SQL="${READER_PASS//\'/\'\'}"
as_server "$BINDIR/psql" -h "$SOCK" -p "$PORT" -U postgres -d postgres -q -v ON_ERROR_STOP=1 \
    -v role="$PG_USER" -v pass="$PASS_SQL" -v reader="$READER" -v reader_pass="$READER_PASS_SQL" \
    >/dev/null <<'SQL'
SELECT format('CREATE ROLE %I', :'role')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \gexec
SELECT format('ALTER ROLE %I WITH LOGIN SUPERUSER PASSWORD %L', :'role', :'pass') \gexec
SELECT format('CREATE ROLE %I', :'reader')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'reader') \gexec
SELECT format('ALTER ROLE %I WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION '
              'NOBYPASSRLS PASSWORD %L', :'reader', :'reader_pass') \gexec
SQL

URL="postgresql+psycopg://${PG_USER}:${PG_PASS}@127.0.0.1:${PORT}/postgres"
READER_URL="postgresql+psycopg://${READER}:${READER_PASS}@127.0.0.1:${PORT}/postgres"
mkdir -p "$(dirname "$ENV_FILE")"
cat > "$ENV_FILE" <<EOF
# Written by scripts/ci_postgres.sh: the test PostgreSQL server.
export MACSQL_PG_URL='$URL'
export MACSQL_PG_READER_URL='$READER_URL'
export MACSQL_PG_DATA='$DATA'
EOF
log "wrote $ENV_FILE"

# Load the Spider databases with the project's own loader.
if [[ -z "${PYTHON:-}" ]]; then
    PYTHON="$(command -v python || command -v python3 || true)"
fi
"$PYTHON" -c "import macsql.database.loaders.command" 2>/dev/null \
    || die "'$PYTHON' cannot import macsql; set PYTHON to the project's interpreter"
# shellcheck disable=SC2086
"$PYTHON" -m macsql.database.loaders.command --admin-url "$URL" --spider-dir "$SPIDER_DIR" \
    --grant-select-to "$READER" ${MACSQL_PG_DATABASES:-}

echo "MACSQL_PG_URL=$URL"
echo "MACSQL_PG_READER_URL=$READER_URL"
