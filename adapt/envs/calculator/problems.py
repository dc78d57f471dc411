"""The calculator environment's built-in problems: short GSM8K-style word problems.

Written for this project (not taken from GSM8K); every answer is an integer, and each problem
needs two to four arithmetic operations.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Problem:
    question: str
    answer: float


PROBLEMS: tuple[Problem, ...] = (
    Problem("Tom buys 3 bags of apples with 12 apples in each bag. He eats 5 apples. How many "
            "apples does he have left?", 31),
    Problem("A baker makes 48 muffins and packs them in boxes of 6. She sells each box for 9 "
            "dollars. How many dollars does she get for all the boxes?", 72),
    Problem("Maria reads 15 pages on Monday and twice as many on Tuesday. Her book has 120 "
            "pages. How many pages are left to read?", 75),
    Problem("A train travels 60 kilometres per hour for 3 hours and then 80 kilometres per hour "
            "for 2 hours. How many kilometres does it travel in total?", 340),
    Problem("A school has 4 classes with 27 students each. 18 students are absent. How many "
            "students are present?", 90),
    Problem("Sam saves 25 dollars a week for 8 weeks and then spends 70 dollars on a bike "
            "helmet. How many dollars does he have left?", 130),
    Problem("A garden has 7 rows of 14 tulips. A storm destroys 23 tulips. How many tulips are "
            "left?", 75),
    Problem("A shop sells pencils at 3 for 2 dollars. How many dollars do 27 pencils cost?", 18),
    Problem("Lena has 250 stickers. She gives a fifth of them to her brother and 30 to her "
            "friend. How many stickers does she keep?", 170),
    Problem("A farmer has 36 cows and 4 times as many chickens. How many animals does he have "
            "in total?", 180),
    Problem("A cinema has 18 rows of 22 seats. 289 tickets are sold. How many seats are "
            "empty?", 107),
    Problem("Ben runs 5 kilometres every weekday and 12 kilometres on Saturday. How many "
            "kilometres does he run in 3 weeks?", 111),
    Problem("A jar holds 2 litres of juice. Each glass holds 250 millilitres. How many glasses "
            "can be filled from 3 jars?", 24),
    Problem("Ana earns 14 dollars an hour and works 6 hours a day for 5 days. She pays 95 "
            "dollars for rent. How many dollars does she keep?", 325),
    Problem("A box has 144 crayons shared equally among 12 children. Each child loses 3 "
            "crayons. How many crayons does each child have now?", 9),
    Problem("A bus carries 42 people. At the first stop 17 get off and 9 get on. At the second "
            "stop 12 get off. How many people are on the bus?", 22),
    Problem("A rectangle is 13 metres long and 9 metres wide. What is its perimeter in "
            "metres?", 44),
    Problem("Omar buys 6 notebooks at 4 dollars each and 3 pens at 2 dollars each. He pays with "
            "a 50 dollar bill. How many dollars of change does he get?", 20),
    Problem("A water tank holds 900 litres. It loses 35 litres a day for 12 days. How many "
            "litres are left?", 480),
    Problem("A library has 5 shelves with 64 books each. It lends out 97 books and buys 45 new "
            "ones. How many books does it have now?", 268),
)
