-- Placeholder: migration 0004 belongs to another branch. Migration versions must be contiguous, so
-- this branch carries this empty file until that one is merged; delete it then.
SELECT 1;
