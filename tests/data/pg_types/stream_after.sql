-- Executed during streaming after the rows of rows.sql were inserted again with ids + 100: the update
-- leaves every TOASTed column unchanged, so pgoutput sends them as "unchanged toast" ('u').
UPDATE t_toast SET other = other + 1;
UPDATE t_postgis SET other = other + 1 WHERE id = 1 OR id = 101;
