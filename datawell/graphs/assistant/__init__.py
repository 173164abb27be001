"""The assistant: plan → one nl2ql query per step → answer, with conversation memory."""
