-- Presets: reusable Agent launch settings of a Namespace. The template is stored as checked by the
-- API (internal/preset); it never holds credential bytes (a password variable has no default and
-- the harness secret is only a token). Names are unique in their Namespace, compared as written.
CREATE TABLE occ.presets (
  id           text PRIMARY KEY CHECK (occ.is_prefixed_id(id, 'pre')),
  namespace_id text NOT NULL REFERENCES occ.namespaces (id),
  name         text COLLATE "C" NOT NULL CHECK (occ.is_valid_name(name)),
  template     jsonb NOT NULL CHECK (jsonb_typeof(template) = 'object'),
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (namespace_id, id),
  UNIQUE (namespace_id, name)
);
