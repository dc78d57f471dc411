; Chain-of-thought (Wei et al. 2022): paper figure 13.
(define cot-agent
  (:states
    (Ques (:text "[Question]") (:doc "the task"))
    (Tht (:text "[Thought]") (:doc "reason step by step"))
    (Ans (:text "[Answer]") (:doc "the final answer")))
  (:behavior
    (next Ques Tht Ans)))
