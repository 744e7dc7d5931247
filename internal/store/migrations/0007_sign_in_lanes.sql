-- Password sign-in budgets, shared by every API replica. A lane is keyed by the SHA-256 of what it
-- limits (an email alone, or an email from one client address), never the key itself. It holds the
-- times of the failures still inside the window and the start times of the attempts in flight
-- (which count against the budget, so parallel guesses cannot overrun it); an attempt whose
-- replica died is forgotten after its time to live. The application role reaches the table only
-- through the two functions below.
CREATE TABLE occ.sign_in_lanes (
  key_hash   bytea PRIMARY KEY CHECK (octet_length(key_hash) = 32),
  failures   timestamptz[] NOT NULL DEFAULT '{}',
  attempts   timestamptz[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL
);
CREATE INDEX sign_in_lanes_updated ON occ.sign_in_lanes (updated_at);

-- Admits one attempt on the lane when its failures in the window and its attempts in flight are
-- under p_budget. Returns whether it was admitted and, when not, the time the oldest failure leaves
-- the window (NULL when only attempts in flight fill the budget). p_now is the caller's clock and
-- the admitted attempt's token. Lanes idle for longer than the window and the time to live are
-- removed on the way, a few at a time.
CREATE FUNCTION occ.acquire_sign_in_lane(
  p_key bytea, p_now timestamptz, p_window interval, p_attempt_ttl interval, p_budget integer,
  OUT admitted boolean, OUT retry_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f timestamptz[];
  a timestamptz[];
BEGIN
  DELETE FROM occ.sign_in_lanes WHERE key_hash IN (
    SELECT key_hash FROM occ.sign_in_lanes
     WHERE updated_at < p_now - p_window - p_attempt_ttl AND key_hash <> p_key LIMIT 16
       FOR UPDATE SKIP LOCKED);
  INSERT INTO occ.sign_in_lanes (key_hash, updated_at) VALUES (p_key, p_now) ON CONFLICT (key_hash) DO NOTHING;
  SELECT l.failures, l.attempts INTO f, a FROM occ.sign_in_lanes l WHERE l.key_hash = p_key FOR UPDATE;
  f := ARRAY(SELECT x FROM unnest(f) x WHERE x > p_now - p_window ORDER BY x);
  a := ARRAY(SELECT x FROM unnest(a) x WHERE x > p_now - p_attempt_ttl ORDER BY x);
  admitted := cardinality(f) + cardinality(a) < p_budget;
  IF admitted THEN
    a := a || p_now;
  ELSE
    retry_at := f[1] + p_window;
  END IF;
  UPDATE occ.sign_in_lanes SET failures = f, attempts = a, updated_at = p_now WHERE key_hash = p_key;
END
$$;

-- Ends the attempt admitted at p_attempt: 'failed' spends the budget for a window, 'succeeded'
-- clears the lane's failures, 'released' (neither: a dependency failed) only ends the attempt. An
-- empty lane is deleted.
CREATE FUNCTION occ.end_sign_in_attempt(p_key bytea, p_attempt timestamptz, p_now timestamptz, p_outcome text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  f timestamptz[];
  a timestamptz[];
  i integer;
BEGIN
  IF p_outcome NOT IN ('failed', 'succeeded', 'released') THEN
    RAISE EXCEPTION 'unknown sign-in outcome %', p_outcome USING ERRCODE = '22023';
  END IF;
  SELECT l.failures, l.attempts INTO f, a FROM occ.sign_in_lanes l WHERE l.key_hash = p_key FOR UPDATE;
  IF NOT FOUND THEN
    f := '{}';
    a := '{}';
  END IF;
  i := array_position(a, p_attempt);
  IF i IS NOT NULL THEN
    a := a[:i - 1] || a[i + 1:];
  END IF;
  IF p_outcome = 'failed' THEN
    f := f || p_now;
  ELSIF p_outcome = 'succeeded' THEN
    f := '{}';
  END IF;
  IF cardinality(f) = 0 AND cardinality(a) = 0 THEN
    DELETE FROM occ.sign_in_lanes WHERE key_hash = p_key;
  ELSE
    INSERT INTO occ.sign_in_lanes (key_hash, failures, attempts, updated_at) VALUES (p_key, f, a, p_now)
    ON CONFLICT (key_hash) DO UPDATE SET failures = EXCLUDED.failures, attempts = EXCLUDED.attempts,
      updated_at = EXCLUDED.updated_at;
  END IF;
END
$$;

REVOKE ALL ON FUNCTION occ.acquire_sign_in_lane(bytea, timestamptz, interval, interval, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION occ.end_sign_in_attempt(bytea, timestamptz, timestamptz, text) FROM PUBLIC;
