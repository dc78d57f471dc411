; Direct answer: paper figure 14.
(define direct-agent
  (:states
    (Ques (:text "[Question]") (:doc "the task"))
    (Ans (:text "[Answer]") (:doc "the final answer")))
  (:behavior
    (next Ques Ans)))
