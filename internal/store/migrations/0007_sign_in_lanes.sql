-- Password sign-in budgets, shared by every API replica. A lane is keyed by the SHA-256 of what it
-- limits (an email alone, or an email from one client address), never the key itself. It holds the
-- times of the failures still inside the window and the start times of the attempts in flight
-- (which count against the budget, so parallel guesses cannot overrun it); an attempt whose
-- replica died is forgotten after its time to live. The application role reaches the table only
-- through the two functions below. An attempt spends several lanes at once; both functions take
-- them all, so a sign-in costs two statements whatever the number of lanes.
CREATE TABLE occ.sign_in_lanes (
  key_hash   bytea PRIMARY KEY CHECK (octet_length(key_hash) = 32),
  failures   timestamptz[] NOT NULL DEFAULT '{}',
  attempts   timestamptz[] NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL
);
CREATE INDEX sign_in_lanes_updated ON occ.sign_in_lanes (updated_at);

-- Admits one attempt on every lane (p_keys[i] with budget p_budgets[i]) when each lane's failures
-- in the window and attempts in flight are under its budget; otherwise admits it on none. Returns
-- whether it was admitted and, when not, the latest time a refusing lane's oldest failure leaves
-- the window (NULL when only attempts in flight fill the budgets). p_now is the caller's clock and
-- the admitted attempt's token. Lanes are locked in key order, so concurrent attempts cannot
-- deadlock. Lanes idle for longer than the window and the time to live are removed on the way, a
-- few at a time.
CREATE FUNCTION occ.acquire_sign_in_lanes(
  p_keys bytea[], p_budgets integer[], p_now timestamptz, p_window interval, p_attempt_ttl interval,
  OUT admitted boolean, OUT retry_at timestamptz)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  lane record;
  f timestamptz[];
  a timestamptz[];
BEGIN
  IF cardinality(p_keys) IS DISTINCT FROM cardinality(p_budgets) THEN
    RAISE EXCEPTION 'one budget per sign-in lane' USING ERRCODE = '22023';
  END IF;
  DELETE FROM occ.sign_in_lanes WHERE key_hash IN (
    SELECT key_hash FROM occ.sign_in_lanes
     WHERE updated_at < p_now - p_window - p_attempt_ttl AND key_hash <> ALL (p_keys) LIMIT 16
       FOR UPDATE SKIP LOCKED);
  INSERT INTO occ.sign_in_lanes (key_hash, updated_at)
  SELECT k, p_now FROM unnest(p_keys) k ORDER BY k ON CONFLICT (key_hash) DO NOTHING;
  
  admitted := true;
  FOR lane IN
    SELECT l.key_hash, l.failures, l.attempts, b.budget
      FROM occ.sign_in_lanes l
      JOIN unnest(p_keys, p_budgets) AS b(key_hash, budget) ON b.key_hash = l.key_hash
     ORDER BY l.key_hash
       FOR UPDATE OF l
  LOOP
    f := ARRAY(SELECT x FROM unnest(lane.failures) x WHERE x > p_now - p_window ORDER BY x);
    a := ARRAY(SELECT x FROM unnest(lane.attempts) x WHERE x > p_now - p_attempt_ttl ORDER BY x);
    IF cardinality(f) + cardinality(a) >= lane.budget THEN
      admitted := false;
      retry_at := greatest(retry_at, f[1] + p_window);
    END IF;
    UPDATE occ.sign_in_lanes SET failures = f, attempts = a, updated_at = p_now WHERE key_hash = lane.key_hash;
  END LOOP;
  IF admitted THEN
    UPDATE occ.sign_in_lanes SET attempts = attempts || p_now WHERE key_hash = ANY (p_keys);
  END IF;
END
$$;

-- Ends the attempt admitted at p_attempt on every lane of p_keys: 'failed' spends the budgets for
-- a window, 'succeeded' clears the lanes' failures, 'released' (neither: a dependency failed) only
-- ends the attempt. An empty lane is deleted.
CREATE FUNCTION occ.end_sign_in_attempt(p_keys bytea[], p_attempt timestamptz, p_now timestamptz, p_outcome text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  lane record;
  f timestamptz[];
  a timestamptz[];
  i integer;
BEGIN
  IF p_outcome NOT IN ('failed', 'succeeded', 'released') THEN
    RAISE EXCEPTION 'unknown sign-in outcome %', p_outcome USING ERRCODE = '22023';
  END IF;
  FOR lane IN
    SELECT l.key_hash, l.failures, l.attempts FROM occ.sign_in_lanes l
     WHERE l.key_hash = ANY (p_keys) ORDER BY l.key_hash FOR UPDATE
  LOOP
    f := lane.failures;
    a := lane.attempts;
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
      DELETE FROM occ.sign_in_lanes WHERE key_hash = lane.key_hash;
    ELSE
      UPDATE occ.sign_in_lanes SET failures = f, attempts = a, updated_at = p_now WHERE key_hash = lane.key_hash;
    END IF;
  END LOOP;
END
$$;

REVOKE ALL ON FUNCTION occ.acquire_sign_in_lanes(bytea[], integer[], timestamptz, interval, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION occ.end_sign_in_attempt(bytea[], timestamptz, timestamptz, text) FROM PUBLIC;
