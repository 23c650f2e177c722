#!/bin/sh
# Runs once, on the first start of an empty PostgreSQL data directory (docker-entrypoint-initdb.d).
# One database and one owner role per service; passwords come from the container's environment.
set -eu

create_db() {
  db="$1"; user="$2"; password="$3"
  psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres \
       -v db="$db" -v usr="$user" -v pw="$password" <<'SQL'
CREATE ROLE :"usr" LOGIN PASSWORD :'pw';
CREATE DATABASE :"db" OWNER :"usr";
SQL
}

create_db claims          claims          "${CLAIMS_DB_PASSWORD:?}"
create_db plugin_registry plugin_registry "${PLUGIN_REGISTRY_DB_PASSWORD:?}"
