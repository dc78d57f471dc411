; PASS, Plan-Act-Summarize-Solve: paper figure 5. The actions written before [Summary] run
; concurrently; the summary (or the raw results) is supplied by the agent runtime.
(define pass-agent
  (:states
    (Ques (:text "[Question]") (:doc "the task"))
    (Plan (:text "[Thought]") (:doc "plan the next set of independent actions"))
    (Act (:text "[Action]") (:doc "the name of one action or tool"))
    (Act-Inp (:text "[Action Input]") (:doc "the action's argument"))
    (Sum (:text "[Summary]") (:flags :env-input) (:doc "the actions' results, summarised"))
    (Final-Tht (:text "[Final Thought]") (:doc "conclude from the summaries"))
    (Ans (:text "[Answer]") (:doc "the final answer")))
  (:behavior
    (next
      Ques
      (until
        (next
          Plan
          (until
            (next Act Act-Inp)
            Sum))
        Final-Tht)
      Ans)))
