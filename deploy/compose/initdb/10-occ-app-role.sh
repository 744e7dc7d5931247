#!/bin/sh
# Runs once, when the postgres volume is empty: creates the application role. `occ migrate` (the
# database owner, POSTGRES_USER) grants it its privileges.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  --set app_password="$OCC_APP_PASSWORD" <<'SQL'
CREATE ROLE occ_app LOGIN PASSWORD :'app_password';
SQL
