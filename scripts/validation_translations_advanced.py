"""The validation suite's gold queries for sql-eval's advanced questions
(instruct_advanced_postgres.csv), in the QL; validation_translations.py holds the basic
ones and says how they were written."""

from __future__ import annotations

from build_dev_suite import Translation

ADVANCED = {
    "broker-11": Translation(
        "WITH cust_tx AS (SELECT c.sbCustId, c.sbCustName, SUM(t.sbTxAmount) AS total_amount FROM sbCustomer "
        "c JOIN sbTransaction t ON c.sbCustId = t.sbTxCustId GROUP BY c.sbCustId, c.sbCustName) SELECT "
        "sbCustName, total_amount FROM cust_tx ORDER BY total_amount DESC LIMIT 5"
    ),
    "broker-13": Translation(
        "WITH cust_tx_stats AS (SELECT c.sbCustId, c.sbCustName, COUNT(t.sbTxId) AS total_tx, SUM(CASE WHEN "
        "t.sbTxStatus = 'success' THEN 1 ELSE 0 END) AS success_tx FROM sbCustomer c JOIN sbTransaction t ON "
        "c.sbCustId = t.sbTxCustId GROUP BY c.sbCustId, c.sbCustName) SELECT sbCustName, CAST(success_tx AS "
        "REAL)/total_tx * 100 AS success_rate FROM cust_tx_stats WHERE total_tx >= 5 ORDER BY success_rate"
    ),
    "broker-14": Translation(
        "WITH stock_stats AS (SELECT t.sbTickerSymbol, MIN(d.sbDpLow) AS min_price, MAX(d.sbDpHigh) AS "
        "max_price FROM sbDailyPrice d JOIN sbTicker t ON d.sbDpTickerId = t.sbTickerId WHERE d.sbDpDate "
        "BETWEEN '2023-04-01' AND '2023-04-04' GROUP BY t.sbTickerSymbol) SELECT sbTickerSymbol, max_price - "
        "min_price AS price_change FROM stock_stats ORDER BY price_change DESC LIMIT 3"
    ),
    # sql-eval's second variant: the month as text ('YYYY-MM').
    "broker-15": Translation(
        "WITH monthly_price_stats AS (SELECT TO_CHAR(DATE_TRUNC('month', sbDpDate), 'YYYY-MM') AS month, sbDpTickerId, "
        "AVG(sbDpClose) AS avg_close, MAX(sbDpHigh) AS max_high, MIN(sbDpLow) AS min_low FROM sbDailyPrice "
        "GROUP BY month, sbDpTickerId) SELECT t.sbTickerSymbol, mps.month, mps.avg_close, mps.max_high, "
        "mps.min_low, (mps.avg_close - LAG(mps.avg_close) OVER (PARTITION BY mps.sbDpTickerId ORDER BY "
        "mps.month)) / LAG(mps.avg_close) OVER (PARTITION BY mps.sbDpTickerId ORDER BY mps.month) AS "
        "mom_change FROM monthly_price_stats mps JOIN sbTicker t ON mps.sbDpTickerId = t.sbTickerId",
        variant=1,
    ),
    "broker-16": Translation(
        "SELECT c.sbCustName, COUNT(t.sbTxId) AS number_of_transactions, COALESCE(SUM(t.sbTxAmount), 0) AS "
        "total_transaction_amount, DENSE_RANK() OVER ( ORDER BY COALESCE(SUM(t.sbTxAmount), 0) DESC) AS CR "
        "FROM sbCustomer c LEFT JOIN sbTransaction t ON c.sbCustId = t.sbTxCustId GROUP BY c.sbCustName ORDER"
        " BY CR"
    ),
    "broker-20": Translation(
        "WITH active_customers AS (SELECT c.sbCustId, COUNT(t.sbTxId) AS num_transactions FROM sbCustomer c "
        "JOIN sbTransaction t ON c.sbCustId = t.sbTxCustId AND DATE_TRUNC('month', c.sbCustJoinDate) = "
        "DATE_TRUNC('month', t.sbTxDateTime) GROUP BY c.sbCustId) SELECT ac.sbCustId, c.sbCustName, "
        "ac.num_transactions FROM active_customers ac JOIN sbCustomer c ON ac.sbCustId = c.sbCustId ORDER BY "
        "ac.num_transactions DESC LIMIT 1"
    ),
    # The regular expression as LIKEs (`~` is PostgreSQL only).
    "broker-21": Translation(
        "SELECT COUNT(DISTINCT t.sbTxCustId) FROM sbTransaction t JOIN sbCustomer c ON t.sbTxCustId = "
        "c.sbCustId JOIN sbTicker tk ON t.sbTxTickerId = tk.sbTickerId WHERE c.sbCustEmail LIKE '%.com' AND "
        "(tk.sbTickerSymbol LIKE '%AMZN%' OR tk.sbTickerSymbol LIKE '%AAPL%' OR tk.sbTickerSymbol LIKE '%GOOGL%' "
        "OR tk.sbTickerSymbol LIKE '%META%' OR tk.sbTickerSymbol LIKE '%NFLX%')"
    ),
    "broker-22": Translation(
        "SELECT COUNT(sbCustId) FROM sbCustomer WHERE (LOWER(sbCustName) LIKE 'j%' OR LOWER(sbCustName) LIKE "
        "'%ez') AND LOWER(sbCustState) LIKE '%a'"
    ),
    "broker-23": Translation(
        "SELECT sbCustCountry, COUNT(sbCustId) AS TAC FROM sbCustomer WHERE sbCustJoinDate >= '2023-01-01' "
        "GROUP BY sbCustCountry"
    ),
    "broker-25": Translation(
        "SELECT c.sbCustCountry,COALESCE(100.0 * COUNT(DISTINCT CASE WHEN c.sbCustStatus = 'active' THEN "
        "c.sbCustId END) / NULLIF(COUNT(DISTINCT t.sbTxCustId), 0), 0) AS AR FROM sbCustomer c JOIN "
        "sbTransaction t ON c.sbCustId = t.sbTxCustId WHERE c.sbCustJoinDate BETWEEN '2022-01-01' AND "
        "'2022-12-31' GROUP BY c.sbCustCountry"
    ),
    # A date difference in days with julianday().
    "car_dealership-11": Translation(
        "WITH sale_payments AS (SELECT s.id AS sale_id, s.sale_date, MAX(p.payment_date) AS "
        "latest_payment_date FROM sales s JOIN payments_received p ON s.id = p.sale_id GROUP BY 1,2) SELECT "
        "ROUND(AVG(julianday(latest_payment_date) - julianday(sale_date)), 2) AS avg_days_to_payment FROM sale_payments"
    ),
    "car_dealership-12": Translation(
        "WITH latest_inventory_status AS (SELECT car_id, is_in_inventory, ROW_NUMBER() OVER(PARTITION BY "
        "car_id ORDER BY snapshot_date DESC) AS rn FROM inventory_snapshots) SELECT c.make, c.model, "
        "MAX(s.sale_price) AS highest_sale_price FROM cars c JOIN sales s ON c.id = s.car_id JOIN "
        "latest_inventory_status lis ON c.id = lis.car_id WHERE lis.is_in_inventory = FALSE AND lis.rn = 1 "
        "GROUP BY c.make, c.model ORDER BY highest_sale_price DESC"
    ),
    # Every selected column in the GROUP BY (datasets have no primary key to group by).
    "car_dealership-13": Translation(
        "WITH salesperson_sales AS (SELECT s.id, s.first_name, s.last_name, SUM(sa.sale_price) AS total_sales"
        " FROM salespersons s LEFT JOIN sales sa ON s.id = sa.salesperson_id GROUP BY s.id, s.first_name, s.last_name) "
        "SELECT id, first_name, last_name, total_sales FROM salesperson_sales ORDER BY total_sales DESC NULLS LAST LIMIT 5"
    ),
    "car_dealership-15": Translation(
        "SELECT sp.first_name, sp.last_name, COALESCE(SUM(s.sale_price), 0) AS total_sales_amount, "
        "COUNT(s.id) AS number_of_sales, RANK() OVER ( ORDER BY COALESCE(SUM(s.sale_price), 0) DESC) AS sr "
        "FROM salespersons sp LEFT JOIN sales s ON sp.id = s.salesperson_id GROUP BY sp.id, sp.first_name, "
        "sp.last_name",
        more=[
            "SELECT sp.first_name, sp.last_name, SUM(s.sale_price) AS total_sales_amount, COUNT(*) AS "
            "number_of_sales, RANK() OVER ( ORDER BY SUM(s.sale_price) DESC) AS sr FROM salespersons sp JOIN "
            "sales s ON sp.id = s.salesperson_id GROUP BY sp.id, sp.first_name, sp.last_name"
        ],
    ),
    # generate_series() as a recursive CTE of months; sql-eval's third variant: the month as text ('YYYY-MM').
    "car_dealership-16": Translation(
        "WITH RECURSIVE monthly_totals AS (SELECT DATE_TRUNC('month', payment_date) AS dt, SUM(payment_amount) AS "
        "total_payments FROM payments_received GROUP BY dt), monthly_range AS (SELECT MIN(dt) AS dt FROM monthly_totals "
        "UNION ALL SELECT dt + INTERVAL '1 month' FROM monthly_range WHERE dt < (SELECT MAX(dt) FROM monthly_totals)), "
        "monthly_totals_with_zero AS (SELECT mr.dt, COALESCE(mt.total_payments, 0) AS total_payments FROM monthly_range mr "
        "LEFT JOIN monthly_totals mt ON mr.dt = mt.dt) SELECT TO_CHAR(m.dt, 'YYYY-MM') AS month, m.total_payments, "
        "m.total_payments - LAG(m.total_payments, 1) OVER (ORDER BY m.dt) AS mom_change FROM monthly_totals_with_zero m "
        "ORDER BY m.dt",
        variant=2,
    ),
    "car_dealership-20": Translation(
        "SELECT c.make, c.model, s.sale_price FROM cars c JOIN sales s ON c.id = s.car_id JOIN "
        "inventory_snapshots i ON c.id = i.car_id AND DATE_TRUNC('day', s.sale_date) = DATE_TRUNC('day', "
        "i.snapshot_date) WHERE i.is_in_inventory = FALSE ORDER BY s.sale_price DESC LIMIT 1"
    ),
    "car_dealership-21": Translation(
        "SELECT c.make, c.model, c.year, c.color, c.vin_number, AVG(s.sale_price) AS avg_sale_price FROM cars"
        " c JOIN sales s ON c.id = s.car_id WHERE LOWER(c.make) LIKE '%ford%' OR LOWER(c.model) LIKE "
        "'%mustang%' GROUP BY c.make, c.model, c.year, c.color, c.vin_number"
    ),
    "car_dealership-22": Translation(
        "SELECT c.make, c.model, COUNT(s.id) AS num_sales FROM cars c LEFT JOIN sales s ON c.id = s.car_id "
        "WHERE LOWER(c.vin_number) LIKE '%m5%' GROUP BY c.make, c.model"
    ),
    "car_dealership-24": Translation(
        "SELECT AVG(sale_price) AS ASP FROM sales WHERE sale_date >= '2023-01-01' AND sale_date <= '2023-03-31'"
    ),
    "car_dealership-25": Translation(
        "SELECT salespersons.first_name, salespersons.last_name, AVG(sales.sale_price) AS ASP FROM sales JOIN"
        " salespersons ON sales.salesperson_id = salespersons.id GROUP BY salespersons.first_name, "
        "salespersons.last_name ORDER BY ASP DESC NULLS LAST LIMIT 3"
    ),
    "car_dealership-26": Translation(
        "SELECT (SUM(sale_price) - SUM(cars.cost)) / SUM(cars.cost) * 100 AS gpm FROM sales JOIN cars ON "
        "sales.car_id = cars.id WHERE EXTRACT(YEAR FROM sale_date) = 2023"
    ),
    "derm_treatment-11": Translation(
        "WITH doctor_treatment AS (SELECT d.doc_id, d.loc_state FROM doctors d JOIN treatments t ON d.doc_id "
        "= t.doc_id JOIN drugs dr ON t.drug_id = dr.drug_id WHERE dr.drug_type = 'biologic') SELECT DISTINCT "
        "loc_state FROM doctor_treatment"
    ),
    "derm_treatment-12": Translation(
        "WITH patient_treatment AS (SELECT p.patient_id, p.weight_kg FROM patients p JOIN treatments t ON "
        "p.patient_id = t.patient_id WHERE t.drug_id = (SELECT drug_id FROM drugs WHERE drug_name = "
        "'Drugalin')) SELECT AVG(weight_kg) FROM patient_treatment"
    ),
    "derm_treatment-13": Translation(
        "SELECT a.description, a.treatment_id, d.drug_id, d.drug_name FROM adverse_events a JOIN treatments t"
        " ON a.treatment_id = t.treatment_id JOIN drugs d ON t.drug_id = d.drug_id WHERE d.drug_type = "
        "'topical'"
    ),
    "derm_treatment-14": Translation(
        "WITH patient_diagnosis_treatment AS (SELECT p.patient_id FROM patients p JOIN treatments t ON "
        "p.patient_id = t.patient_id JOIN diagnoses d ON t.diag_id = d.diag_id JOIN drugs dr ON t.drug_id = "
        "dr.drug_id WHERE d.diag_name = 'Psoriasis vulgaris' AND dr.drug_type = 'biologic') SELECT "
        "COUNT(DISTINCT patient_id) FROM patient_diagnosis_treatment"
    ),
    "derm_treatment-15": Translation(
        "WITH FirstTreatment AS (SELECT p.patient_id, MIN(t.start_dt) AS first_treatment_date FROM patients p"
        " JOIN treatments t ON p.patient_id = t.patient_id GROUP BY p.patient_id), NewPatientsPerYear AS "
        "(SELECT EXTRACT(YEAR FROM first_treatment_date) AS YEAR, COUNT(patient_id) AS new_patients FROM "
        "FirstTreatment GROUP BY EXTRACT(YEAR FROM first_treatment_date)), NPI AS (SELECT YEAR, new_patients,"
        " new_patients - LAG(new_patients, 1) OVER (ORDER BY YEAR) AS npi FROM NewPatientsPerYear) SELECT "
        "YEAR, new_patients, npi FROM NPI ORDER BY YEAR"
    ),
    "derm_treatment-16": Translation(
        "SELECT doc_id, specialty, num_drugs, RANK() OVER (PARTITION BY specialty ORDER BY num_drugs DESC) AS"
        " SDR FROM (SELECT d.doc_id, d.specialty, COUNT(DISTINCT t.drug_id) AS num_drugs FROM doctors d LEFT "
        "JOIN treatments t ON d.doc_id = t.doc_id GROUP BY d.doc_id, d.specialty) AS sub",
        more=[
            "WITH doc_drug_counts AS (SELECT d.doc_id, d.specialty, COUNT(DISTINCT t.drug_id) AS distinct_drugs "
            "FROM doctors d JOIN treatments t ON d.doc_id = t.doc_id GROUP BY d.doc_id, d.specialty) SELECT "
            "doc_id, specialty, distinct_drugs AS number_of_distinct_drugs_prescribed, RANK() OVER (PARTITION BY "
            "specialty ORDER BY distinct_drugs DESC) AS SDR FROM doc_drug_counts"
        ],
    ),
    "derm_treatment-20": Translation(
        "WITH adverse_events_per_drug AS (SELECT d.drug_id, COUNT(ae.id) AS num_events FROM adverse_events ae"
        " JOIN treatments t ON ae.treatment_id = t.treatment_id AND DATE_TRUNC('month', ae.reported_dt) = "
        "DATE_TRUNC('month', t.start_dt) JOIN drugs d ON t.drug_id = d.drug_id GROUP BY d.drug_id) SELECT "
        "ae.drug_id, d.drug_name, ae.num_events FROM adverse_events_per_drug ae JOIN drugs d USING(drug_id) "
        "ORDER BY ae.num_events DESC LIMIT 1"
    ),
    "derm_treatment-21": Translation(
        "SELECT COUNT(*) FROM patients WHERE email LIKE '%@gmail.com' OR email LIKE '%@yahoo.com'"
    ),
    "derm_treatment-22": Translation(
        "SELECT first_name, last_name, specialty FROM doctors WHERE first_name ILIKE 'J%' OR last_name ILIKE '%son%'"
    ),
    "derm_treatment-23": Translation(
        "SELECT COUNT(patient_id) AS pic FROM patients WHERE gender = 'Female' AND ins_type = 'private'"
    ),
    "derm_treatment-24": Translation("SELECT AVG(weight_kg) AS caw FROM patients WHERE gender = 'Male'"),
    "derm_treatment-25": Translation(
        "SELECT d.drug_name, AVG(t.tot_drug_amt / NULLIF((t.end_dt - t.start_dt), 0)) AS ddd FROM treatments "
        "t JOIN drugs d ON t.drug_id = d.drug_id WHERE t.end_dt IS NOT NULL GROUP BY d.drug_name"
    ),
    "derm_treatment-26": Translation(
        "SELECT (AVG(day100_pasi_score) - AVG(day7_pasi_score)) / AVG(day7_pasi_score) * 100 AS d7d100pir "
        "FROM outcomes WHERE day7_pasi_score IS NOT NULL AND day100_pasi_score IS NOT NULL"
    ),
    "ewallet-11": Translation(
        "WITH user_transactions AS (SELECT u.uid, t.txid FROM users u JOIN "
        "wallet_transactions_daily t ON u.uid = t.sender_id WHERE t.sender_type = 0) SELECT UID,"
        " COUNT(txid) AS total_transactions FROM user_transactions GROUP BY UID"
    ),
    "ewallet-12": Translation(
        "WITH merchant_coupon_usage AS (SELECT c.cid, t.amount FROM coupons c JOIN "
        "wallet_transactions_daily t ON c.cid = t.coupon_id WHERE c.merchant_id = 1) SELECT cid,"
        " SUM(amount) AS total_discount FROM merchant_coupon_usage GROUP BY cid"
    ),
    "ewallet-13": Translation(
        "WITH user_session_duration AS (SELECT u.uid, s.session_start_ts, s.session_end_ts FROM "
        "users u JOIN user_sessions s ON u.uid = s.user_id WHERE s.session_start_ts"
        " >= '2023-06-01' AND s.session_end_ts < '2023-06-08') SELECT UID, CAST(SUM(EXTRACT(EPOCH FROM "
        "session_end_ts) - EXTRACT(EPOCH FROM session_start_ts)) AS INT) AS total_duration FROM "
        "user_session_duration GROUP BY UID ORDER BY total_duration DESC",
        more=[
            "WITH session_durations AS (SELECT u.uid AS user_id, EXTRACT(EPOCH FROM s.session_end_ts) - "
            "EXTRACT(EPOCH FROM s.session_start_ts) AS duration_seconds FROM users u JOIN user_sessions s ON u.uid = s.user_id "
            "WHERE s.session_start_ts >= '2023-06-01' AND s.session_start_ts < '2023-06-08') SELECT user_id, "
            "CAST(SUM(duration_seconds) AS INTEGER) AS total_duration FROM session_durations GROUP BY user_id "
            "ORDER BY total_duration DESC"
        ],
    ),
    "ewallet-14": Translation(
        "WITH user_latest_setting AS (SELECT u.uid, s.marketing_opt_in, s.created_at, ROW_NUMBER() OVER "
        "(PARTITION BY u.uid ORDER BY s.created_at DESC) AS rn FROM users u JOIN "
        "user_setting_snapshot s ON u.uid = s.user_id) SELECT UID, marketing_opt_in FROM "
        "user_latest_setting WHERE rn = 1"
    ),
    "ewallet-15": Translation(
        "WITH user_balances AS (SELECT user_id, balance, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY "
        "updated_at DESC) AS rn FROM wallet_user_balance_daily) SELECT user_id, balance FROM "
        "user_balances WHERE rn = 1"
    ),
    "ewallet-16": Translation(
        "WITH merchant_revenue AS (SELECT {m.mid, m.name}, m.category AS merchant_category, SUM(w.amount) AS "
        "total_revenue FROM merchants m INNER JOIN wallet_transactions_daily w ON "
        "m.mid = w.receiver_id AND w.receiver_type = 1 WHERE w.status = 'success' GROUP BY {}, m.category) "
        "SELECT *, RANK() OVER (ORDER BY total_revenue DESC) AS mrr FROM merchant_revenue"
    ),
    "ewallet-19": Translation(
        "WITH coupons_per_merchant AS (SELECT m.mid, COUNT(c.cid) AS num_coupons FROM coupons c "
        "JOIN merchants m ON m.mid = c.merchant_id AND DATE_TRUNC('month', c.created_at) = "
        "DATE_TRUNC('month', m.created_at) GROUP BY m.mid) SELECT coupons_per_merchant.mid, m.name, "
        "coupons_per_merchant.num_coupons FROM coupons_per_merchant JOIN merchants m USING(mid) "
        "ORDER BY coupons_per_merchant.num_coupons DESC LIMIT 1"
    ),
    "ewallet-21": Translation(
        "SELECT u.username, COUNT(n.id) AS total_notifications FROM users u JOIN "
        "notifications n ON u.uid = n.user_id WHERE n.type = 'promotion' AND n.status = 'unread'"
        " AND LOWER(u.country) = 'us' GROUP BY u.username"
    ),
    "ewallet-22": Translation(
        "SELECT m.name, COUNT(c.cid) AS total_coupons FROM merchants m JOIN coupons"
        " c ON m.mid = c.merchant_id WHERE m.status = 'active' AND LOWER(m.category) LIKE '%retail%' GROUP BY"
        " m.name"
    ),
    "ewallet-25": Translation(
        "SELECT m.name, (COUNT(DISTINCT wtd.coupon_id) * 1.0 / NULLIF(COUNT(DISTINCT wtd.txid), 0)) AS CPUR "
        "FROM wallet_transactions_daily AS wtd JOIN merchants AS m ON "
        "wtd.receiver_id = m.mid WHERE wtd.status = 'success' GROUP BY m.name"
    ),
}
