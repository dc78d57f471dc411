"""A calculator tool environment: arithmetic word problems (GSM8K-style) for tool-using agents.

>>> from adapt.envs.calculator import Calculator
>>> env = Calculator()
>>> env.reset(index=0).startswith("Tom buys 3 bags")
True
>>> env.step("calculator 3 * 12 - 5").observation
'31'
>>> env.step("answer 31").reward
1.0
"""

from adapt.envs.calculator.arithmetic import CalculationError, evaluate
from adapt.envs.calculator.config import CalculatorConfig
from adapt.envs.calculator.env import Calculator
from adapt.envs.calculator.problems import PROBLEMS, Problem

__all__ = ["PROBLEMS", "CalculationError", "Calculator", "CalculatorConfig", "Problem",
           "evaluate"]
