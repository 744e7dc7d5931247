-- Names refuse invisible characters, and Namespace names are compared after NFKC normalization.
-- Format characters (Unicode category Cf: zero-width spaces and joiners, bidi embeddings,
-- overrides and isolates, the soft hyphen, the byte order mark, tags) make names that look alike
-- or empty, and a Namespace name is reserved forever. The list below is Cf as of Unicode 15.0,
-- the version of the Go tables behind platform.ValidName; a test compares the two rule by rule.
-- Rows stored before this migration are not re-checked.
CREATE OR REPLACE FUNCTION occ.is_valid_name(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT char_length(value) BETWEEN 1 AND 200
     AND value !~ '^\s' AND value !~ '\s$'
     AND value !~ '[\x01-\x1f\x7f-\x9f\u2028\u2029]'
     AND value !~ '[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]'
$$;

-- Two Namespace names equal under NFKC (a full-width "ｔｅａｍ" and "team", a ligature "ﬁ" and "fi")
-- are one name: the second is refused like any name in use or reserved.
DO $$
DECLARE
  clash text;
BEGIN
  SELECT string_agg(quote_literal(name), ', ') INTO clash
    FROM (SELECT name, count(*) OVER (PARTITION BY normalize(name, NFKC)) AS n FROM occ.namespaces) t
   WHERE n > 1;
  IF clash IS NOT NULL THEN
    RAISE EXCEPTION 'Namespace names equal under NFKC normalization must be resolved before this migration: %', clash
      USING ERRCODE = '23505';
  END IF;
END $$;
CREATE UNIQUE INDEX namespaces_name_nfkc ON occ.namespaces ((normalize(name, NFKC)));
