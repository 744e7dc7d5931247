-- controller_work_result_valid called occ.is_valid_work_result for every row an UPDATE wrote. A
-- SQL function with subqueries is not inlined: PostgreSQL plans its body on its first call in each
-- statement, which made every claim, lease renewal and transition pay 0.5–1 ms of planning, five
-- to ten times the cost of the update itself. The function accepts any row without result data,
-- and almost every row has none, so the constraint now tests that first and calls the function
-- only for rows that carry result data. It accepts exactly the rows it accepted before.
ALTER TABLE occ.controller_work
  DROP CONSTRAINT controller_work_result_valid,
  ADD CONSTRAINT controller_work_result_valid
    CHECK (result_data IS NULL OR occ.is_valid_work_result(state, reason_code, result_data));
