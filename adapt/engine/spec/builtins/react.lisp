; ReAct (Yao et al. 2022): paper figures 3 and 10.
(define react-agent
  (:states
    (Ques (:text "[Question]") (:doc "the task"))
    (Tht (:text "[Thought]") (:doc "reason about what to do next"))
    (Act (:text "[Action]") (:doc "the name of one action or tool"))
    (Act-Inp (:text "[Action Input]") (:doc "the action's argument"))
    (Obs (:text "[Observation]") (:flags :env-input) (:doc "what the action returned"))
    (Final-Tht (:text "[Final Thought]") (:doc "conclude from the observations"))
    (Ans (:text "[Answer]") (:doc "the final answer")))
  (:behavior
    (next
      Ques
      (until
        (next Tht Act Act-Inp Obs)
        Final-Tht)
      Ans)))
