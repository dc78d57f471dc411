; Reflexion (Shinn et al. 2023): paper figure 12.
(define reflexion-agent
  (:states
    (Ques (:text "[Question]") (:doc "the task"))
    (Tht (:text "[Thought]") (:doc "reason about what to do next"))
    (Act (:text "[Action]") (:doc "the name of one action or tool"))
    (Act-Inp (:text "[Action Input]") (:doc "the action's argument"))
    (Obs (:text "[Observation]") (:flags :env-input) (:doc "what the action returned"))
    (Final-Tht (:text "[Final Thought]") (:doc "conclude from the observations"))
    (Prop-Ans (:text "[Proposed Answer]") (:doc "an answer to be evaluated"))
    (Eval (:text "[Evaluation]") (:flags :env-input) (:doc "whether the proposed answer is right"))
    (Ref (:text "[Reflection]") (:doc "what went wrong and what to do differently"))
    (Ans (:text "[Answer]") (:doc "the final answer")))
  (:behavior
    (next
      Ques
      (until
        (next
          (until
            (next Tht Act Act-Inp Obs)
            Final-Tht)
          Prop-Ans
          Eval
          Ref)
        Ans))))
