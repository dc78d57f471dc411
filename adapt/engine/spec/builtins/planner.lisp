; The ADaPT planner's output: reasoning lines, Step lines, then one Execution Order line.
(define adapt-planner
  (:layout lines)
  (:states
    (Think (:text "# Think:") (:doc "reasoning"))
    (Step (:text "Step") (:pattern "\\d+\\s*[:.)-]\\s*\\S.*") (:doc "Step N: one sub-task"))
    (Order (:text "Execution Order:") (:pattern ".*\\S.*")
      (:doc "the steps joined with AND / OR and parentheses")))
  (:behavior
    (next
      (until Think Step)
      (until (or Think Step) Order))))
