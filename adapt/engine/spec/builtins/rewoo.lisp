; ReWOO (Xu et al. 2023): paper figure 11. The solver's answer is supplied by the agent
; runtime after the planned actions have run.
(define rewoo-agent
  (:states
    (Ques (:text "[Question]") (:doc "the task"))
    (Plan (:text "[Plan]") (:doc "one step of the plan"))
    (Act-Lbl (:text "[Action Label]") (:doc "a label for the step's result, e.g. #E1"))
    (Act (:text "[Action]") (:doc "the name of one action or tool"))
    (Act-Inp (:text "[Action Input]") (:doc "the action's argument; may use earlier labels"))
    (Solver (:text "[Answer]") (:flags :env-input) (:doc "the solver's answer from the evidence")))
  (:behavior
    (next
      Ques
      (until
        (next Plan Act-Lbl Act Act-Inp)
        Solver))))
