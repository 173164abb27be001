"""The validation suite's gold queries in the QL, written by hand from sql-eval's gold
(build_validation_suite.py reads them). Keyed by case id: `<db>-<n>`, n counting the
database's rows of instruct_basic_postgres.csv, then instruct_advanced_postgres.csv.

Mostly sql-eval's own query: the QL is PostgreSQL-flavoured, and the fixtures' dataset and
field names are the dumps' (matched ignoring case; `ewallet`'s schema `consumer_div` dropped).
Changes are named beside the case. The basic questions are here, the advanced ones in
validation_translations_advanced.py.
"""

from __future__ import annotations

from build_dev_suite import Translation
from validation_translations_advanced import ADVANCED

DIFFICULTY = {
    "basic_group_order_limit": "easy",
    "basic_join_distinct": "easy",
    "basic_left_join": "easy",
    "basic_join_group_order_limit": "medium",
    "basic_join_date_group_order_limit": "medium",
    "instructions_string_matching": "medium",
    "keywords_aggregate": "medium",
    "keywords_ratio": "medium",
    "instructions_cte_join": "hard",
    "instructions_cte_window": "hard",
    "instructions_date_join": "hard",
}

TODAY = (
    "its gold reads today's date (CURRENT_DATE, NOW()): the QL has no date pinned for a suite, so a "
    "model's current_date would be the day of the run while the fixtures hold the data as of 2025-08-15"
)
# Questions left out, with the reason.
LEFT_OUT = {
    "broker-01": TODAY,
    "broker-12": TODAY,
    "broker-17": TODAY,
    "broker-18": TODAY,
    "broker-19": TODAY,
    "broker-24": TODAY,
    "broker-26": TODAY,
    "car_dealership-01": TODAY,
    "car_dealership-02": TODAY,
    "car_dealership-14": TODAY,
    "car_dealership-17": TODAY,
    "car_dealership-18": TODAY,
    "car_dealership-19": TODAY,
    "car_dealership-23": TODAY,
    "derm_treatment-01": TODAY,
    "derm_treatment-17": TODAY,
    "derm_treatment-18": TODAY,
    "derm_treatment-19": TODAY,
    "ewallet-01": TODAY,
    "ewallet-17": TODAY,
    "ewallet-18": TODAY,
    "ewallet-20": TODAY,
    "ewallet-23": TODAY,
    "ewallet-24": TODAY,
    "ewallet-26": TODAY,
}

# Cases whose gold ORDER BY leaves ties on the data: rows compared as sets.
TIES = {"broker-02", "broker-16", "ewallet-03"}

TRANSLATIONS = {
    "broker-02": Translation(
        "SELECT t.sbTxType, COUNT(DISTINCT t.sbTxCustId) AS num_customers, AVG(t.sbTxShares) AS avg_shares "
        "FROM sbTransaction t WHERE t.sbTxDateTime BETWEEN '2023-01-01' AND '2023-03-31 23:59:59' GROUP BY "
        "t.sbTxType ORDER BY num_customers DESC LIMIT 3"
    ),
    "broker-03": Translation(
        "SELECT tk.sbTickerSymbol, COUNT(tx.sbTxId) AS num_transactions, SUM(tx.sbTxAmount) AS total_amount "
        "FROM sbTicker tk JOIN sbTransaction tx ON tk.sbTickerId = tx.sbTxTickerId GROUP BY tk.sbTickerSymbol"
        " ORDER BY total_amount DESC LIMIT 10"
    ),
    "broker-04": Translation(
        "SELECT c.sbCustState, t.sbTickerType, COUNT(*) AS num_transactions FROM sbTransaction tx JOIN "
        "sbCustomer c ON tx.sbTxCustId = c.sbCustId JOIN sbTicker t ON tx.sbTxTickerId = t.sbTickerId GROUP "
        "BY c.sbCustState, t.sbTickerType ORDER BY num_transactions DESC LIMIT 5"
    ),
    "broker-05": Translation(
        "SELECT DISTINCT c.sbCustId FROM sbCustomer c JOIN sbTransaction t ON c.sbCustId = t.sbTxCustId WHERE"
        " t.sbTxType = 'buy'"
    ),
    "broker-06": Translation(
        "SELECT DISTINCT tk.sbTickerId FROM sbTicker tk JOIN sbDailyPrice dp ON tk.sbTickerId = "
        "dp.sbDpTickerId WHERE dp.sbDpDate >= '2023-04-01'"
    ),
    "broker-07": Translation(
        "SELECT sbTxStatus, COUNT(*) AS num_transactions FROM sbTransaction GROUP BY sbTxStatus ORDER BY "
        "num_transactions DESC LIMIT 3"
    ),
    "broker-08": Translation(
        "SELECT sbCustCountry, COUNT(*) AS num_customers FROM sbCustomer GROUP BY sbCustCountry ORDER BY "
        "num_customers DESC LIMIT 5"
    ),
    "broker-09": Translation(
        "SELECT c.sbCustId, c.sbCustName FROM sbCustomer c LEFT JOIN sbTransaction t ON c.sbCustId = "
        "t.sbTxCustId WHERE t.sbTxCustId IS NULL"
    ),
    "broker-10": Translation(
        "SELECT tk.sbTickerId, tk.sbTickerSymbol FROM sbTicker tk LEFT JOIN sbDailyPrice dp ON tk.sbTickerId "
        "= dp.sbDpTickerId WHERE dp.sbDpTickerId IS NULL"
    ),
    "car_dealership-03": Translation(
        "SELECT c.state, COUNT(DISTINCT s.customer_id) AS unique_customers, SUM(s.sale_price) AS "
        "total_revenue FROM sales s JOIN customers c ON s.customer_id = c.id GROUP BY c.state ORDER BY "
        "total_revenue DESC LIMIT 5"
    ),
    "car_dealership-04": Translation(
        "SELECT c.make, c.model, COUNT(s.id) AS total_sales, SUM(s.sale_price) AS total_revenue FROM sales s "
        "JOIN cars c ON s.car_id = c.id GROUP BY c.make, c.model ORDER BY total_revenue DESC LIMIT 5"
    ),
    "car_dealership-05": Translation(
        "SELECT DISTINCT c.id AS customer_id FROM customers c JOIN sales s ON c.id = s.customer_id"
    ),
    "car_dealership-06": Translation(
        "SELECT DISTINCT s.id AS salesperson_id FROM salespersons s JOIN sales sa ON s.id = sa.salesperson_id"
        " JOIN payments_received p ON sa.id = p.sale_id WHERE p.payment_method = 'cash'"
    ),
    "car_dealership-07": Translation(
        "SELECT payment_method, COUNT(*) AS total_payments, SUM(payment_amount) AS total_amount FROM "
        "payments_received GROUP BY payment_method ORDER BY total_amount DESC LIMIT 3"
    ),
    "car_dealership-08": Translation(
        "SELECT state, COUNT(*) AS total_signups FROM customers GROUP BY state ORDER BY total_signups DESC LIMIT 2"
    ),
    "car_dealership-09": Translation(
        "SELECT c.id AS car_id, c.make, c.model, c.year FROM cars c LEFT JOIN sales s ON c.id = s.car_id "
        "WHERE s.car_id IS NULL"
    ),
    "car_dealership-10": Translation(
        "SELECT s.id AS salesperson_id, s.first_name, s.last_name FROM salespersons s LEFT JOIN sales sa ON "
        "s.id = sa.salesperson_id WHERE sa.salesperson_id IS NULL"
    ),
    # The dates as a half-open range: the column is a timestamp in the QL, a date in the dump.
    "derm_treatment-02": Translation(
        "SELECT p.ins_type, COUNT(DISTINCT t.patient_id) AS num_patients, AVG(o.day100_pasi_score) AS "
        "avg_pasi_score FROM treatments t JOIN patients p ON t.patient_id = p.patient_id JOIN outcomes o ON "
        "t.treatment_id = o.treatment_id WHERE t.end_dt >= '2022-01-01' AND t.end_dt < '2023-01-01' GROUP BY "
        "p.ins_type ORDER BY avg_pasi_score LIMIT 5"
    ),
    "derm_treatment-03": Translation(
        "SELECT d.drug_name, COUNT(*) AS num_treatments, AVG(t.tot_drug_amt) AS avg_drug_amt FROM treatments "
        "t JOIN drugs d ON t.drug_id = d.drug_id GROUP BY d.drug_name ORDER BY num_treatments DESC, "
        "avg_drug_amt DESC LIMIT 5"
    ),
    "derm_treatment-04": Translation(
        "SELECT di.diag_name, COUNT(DISTINCT t.patient_id) AS num_patients, MAX(o.day100_itch_vas) AS "
        "max_itch_score FROM treatments t JOIN diagnoses di ON t.diag_id = di.diag_id JOIN outcomes o ON "
        "t.treatment_id = o.treatment_id GROUP BY di.diag_name ORDER BY max_itch_score DESC, num_patients "
        "DESC LIMIT 3"
    ),
    "derm_treatment-05": Translation(
        "SELECT DISTINCT d.doc_id, d.first_name, d.last_name FROM treatments t JOIN doctors d ON t.doc_id = d.doc_id"
    ),
    "derm_treatment-06": Translation(
        "SELECT DISTINCT p.patient_id, p.first_name, p.last_name FROM outcomes o JOIN treatments t ON "
        "o.treatment_id = t.treatment_id JOIN patients p ON t.patient_id = p.patient_id"
    ),
    "derm_treatment-07": Translation(
        "SELECT ins_type, AVG(height_cm) AS avg_height, AVG(weight_kg) AS avg_weight FROM patients GROUP BY "
        "ins_type ORDER BY avg_height DESC LIMIT 3"
    ),
    "derm_treatment-08": Translation(
        "SELECT specialty, COUNT(*) AS num_doctors FROM doctors GROUP BY specialty ORDER BY num_doctors DESC LIMIT 2"
    ),
    "derm_treatment-09": Translation(
        "SELECT p.patient_id, p.first_name, p.last_name FROM patients p LEFT JOIN treatments t ON "
        "p.patient_id = t.patient_id WHERE t.patient_id IS NULL"
    ),
    "derm_treatment-10": Translation(
        "SELECT d.drug_id, d.drug_name FROM drugs d LEFT JOIN treatments t ON d.drug_id = t.drug_id WHERE "
        "t.drug_id IS NULL"
    ),
    "ewallet-02": Translation(
        "SELECT DATE_TRUNC('month', t.created_at) AS MONTH, COUNT(DISTINCT t.sender_id) AS active_users FROM "
        "wallet_transactions_daily t JOIN users u ON t.sender_id = u.uid WHERE "
        "t.sender_type = 0 AND t.status = 'success' AND u.status = 'active' AND t.created_at >= '2023-01-01' "
        "AND t.created_at < '2024-01-01' GROUP BY MONTH ORDER BY MONTH"
    ),
    "ewallet-03": Translation(
        "SELECT c.code AS coupon_code, COUNT(t.txid) AS redemption_count, SUM(t.amount) AS total_discount "
        "FROM coupons c JOIN wallet_transactions_daily t ON c.cid = t.coupon_id "
        "GROUP BY c.code ORDER BY redemption_count DESC LIMIT 3"
    ),
    "ewallet-04": Translation(
        "SELECT u.country, COUNT(DISTINCT t.sender_id) AS user_count, SUM(t.amount) AS total_amount FROM "
        "users u JOIN wallet_transactions_daily t ON u.uid = t.sender_id WHERE "
        "t.sender_type = 0 GROUP BY u.country ORDER BY total_amount DESC LIMIT 5"
    ),
    "ewallet-05": Translation(
        "SELECT DISTINCT m.mid AS merchant_id FROM merchants m JOIN "
        "wallet_transactions_daily t ON m.mid = t.receiver_id WHERE t.receiver_type = 1"
    ),
    "ewallet-06": Translation("SELECT DISTINCT user_id FROM notifications WHERE type = 'transaction'"),
    "ewallet-07": Translation(
        "SELECT status, COUNT(*) AS COUNT FROM wallet_transactions_daily GROUP BY status ORDER BY COUNT DESC LIMIT 3"
    ),
    "ewallet-08": Translation(
        "SELECT device_type, COUNT(*) AS COUNT FROM user_sessions GROUP BY device_type ORDER BY COUNT DESC LIMIT 2"
    ),
    "ewallet-09": Translation(
        "SELECT u.uid, u.username FROM users u LEFT JOIN notifications n ON u.uid = n.user_id WHERE n.id IS NULL"
    ),
    "ewallet-10": Translation(
        "SELECT m.mid AS merchant_id, m.name AS merchant_name FROM merchants m LEFT JOIN "
        "coupons c ON m.mid = c.merchant_id WHERE c.cid IS NULL"
    ),
    **ADVANCED,
}
