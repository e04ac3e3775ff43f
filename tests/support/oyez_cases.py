"""Case summaries for the Oyez-shaped test API (written for these tests, in our own words).

Each case: name, term, docket, facts, question, conclusion, winning party, decision type.
The texts are plain sentences; the server wraps them in HTML paragraphs as Oyez does.
"""

from __future__ import annotations

CASES: list[dict[str, str]] = [
    {"name": "Miranda v. Arizona", "term": "1965", "docket": "759",
     "facts": "Ernesto Miranda was arrested in Phoenix and questioned by police for two hours about a kidnapping. "
              "Officers never told him that he could remain silent or have a lawyer present. He signed a written "
              "confession that was later used against him at trial.",
     "question": "Does the Fifth Amendment protection against self-incrimination require police to inform suspects "
                 "of their rights before custodial interrogation?",
     "conclusion": "Statements made during custodial interrogation are inadmissible unless the suspect was first "
                   "warned of the right to remain silent and the right to an attorney, and knowingly waived them.",
     "winner": "Ernesto A. Miranda", "decision": "majority opinion"},
    {"name": "Gideon v. Wainwright", "term": "1962", "docket": "155",
     "facts": "Clarence Earl Gideon was charged in Florida with breaking into a pool hall. He could not afford a "
              "lawyer and asked the court to appoint one, but the judge refused because Florida only appointed "
              "counsel in capital cases. Gideon defended himself and was convicted.",
     "question": "Does the Sixth Amendment right to counsel extend to felony defendants in state courts who cannot "
                 "pay for a lawyer?",
     "conclusion": "States must provide an attorney to defendants in criminal cases who cannot afford one; the right "
                   "to counsel is fundamental and applies to the states through the Fourteenth Amendment.",
     "winner": "Clarence Earl Gideon", "decision": "majority opinion"},
    {"name": "Mapp v. Ohio", "term": "1960", "docket": "236",
     "facts": "Police in Cleveland forced their way into Dollree Mapp's home looking for a bombing suspect. They had "
              "no valid search warrant. They found obscene books and pictures and she was convicted of possessing "
              "them.",
     "question": "May evidence obtained through a search that violates the Fourth Amendment be used in a state "
                 "criminal trial?",
     "conclusion": "Evidence seized in an unlawful search cannot be used in state prosecutions; the exclusionary rule "
                   "applies to the states.",
     "winner": "Dollree Mapp", "decision": "majority opinion"},
    {"name": "Terry v. Ohio", "term": "1967", "docket": "67",
     "facts": "A plainclothes detective watched two men repeatedly walk past a store window and confer, suspecting a "
              "robbery was planned. He stopped them, patted down their outer clothing and found revolvers.",
     "question": "Is a brief stop and frisk by police without probable cause for arrest a violation of the Fourth "
                 "Amendment?",
     "conclusion": "An officer who reasonably suspects that a person is armed and involved in crime may briefly stop "
                   "the person and pat down outer clothing for weapons.",
     "winner": "Ohio", "decision": "majority opinion"},
    {"name": "Katz v. United States", "term": "1967", "docket": "35",
     "facts": "FBI agents attached a listening device to the outside of a public telephone booth and recorded "
              "Charles Katz placing illegal bets by phone. They had no warrant.",
     "question": "Does recording a conversation in a public phone booth without a warrant violate the Fourth "
                 "Amendment?",
     "conclusion": "The Fourth Amendment protects people, not places; a person in a closed phone booth has a "
                   "reasonable expectation of privacy, so a warrant was required.",
     "winner": "Charles Katz", "decision": "majority opinion"},
    {"name": "Riley v. California", "term": "2013", "docket": "13-132",
     "facts": "After a traffic stop, police arrested David Riley and searched the contents of his smartphone without "
              "a warrant, finding photos and videos linking him to a gang shooting.",
     "question": "May police search the digital contents of a cell phone seized during an arrest without a warrant?",
     "conclusion": "Police generally need a warrant before searching the data on a cell phone seized incident to "
                   "an arrest, because phones hold vast amounts of private information.",
     "winner": "David Leon Riley", "decision": "majority opinion"},
    {"name": "Carpenter v. United States", "term": "2017", "docket": "16-402",
     "facts": "Prosecutors obtained months of cell-site location records from wireless carriers to place Timothy "
              "Carpenter near a series of store robberies. They used a court order that required less than "
              "probable cause.",
     "question": "Does obtaining historical cell phone location records from a carrier require a search warrant?",
     "conclusion": "Acquiring historical cell-site location information is a search; the government generally needs "
                   "a warrant supported by probable cause.",
     "winner": "Timothy Ivory Carpenter", "decision": "majority opinion"},
    {"name": "Brown v. Board of Education of Topeka", "term": "1952", "docket": "1",
     "facts": "Black children in Topeka, Kansas were denied admission to schools attended by white children under "
              "laws permitting racial segregation. Their parents sued, arguing the separate schools were unequal.",
     "question": "Does racial segregation of children in public schools deny equal protection of the laws?",
     "conclusion": "Separate educational facilities are inherently unequal; segregation in public schools violates "
                   "the Equal Protection Clause of the Fourteenth Amendment.",
     "winner": "Oliver Brown", "decision": "majority opinion"},
    {"name": "Loving v. Virginia", "term": "1966", "docket": "395",
     "facts": "Mildred Jeter, a Black woman, and Richard Loving, a white man, married in Washington D.C. and moved "
              "back to Virginia, where they were prosecuted under a law banning interracial marriage and "
              "sentenced to leave the state.",
     "question": "Does a state law prohibiting marriage between people of different races violate the Fourteenth "
                 "Amendment?",
     "conclusion": "Laws banning interracial marriage violate both the Equal Protection and Due Process Clauses; "
                   "the freedom to marry cannot be restricted by racial classifications.",
     "winner": "Richard Loving", "decision": "majority opinion"},
    {"name": "Obergefell v. Hodges", "term": "2014", "docket": "14-556",
     "facts": "Same-sex couples in Ohio, Michigan, Kentucky and Tennessee sued their states for refusing to license "
              "their marriages or to recognize marriages performed elsewhere.",
     "question": "Does the Fourteenth Amendment require states to license and recognize marriages between two "
                 "people of the same sex?",
     "conclusion": "The right to marry is fundamental and same-sex couples may exercise it; states must license and "
                   "recognize same-sex marriages.",
     "winner": "James Obergefell", "decision": "majority opinion"},
    {"name": "Plessy v. Ferguson", "term": "1895", "docket": "210",
     "facts": "Homer Plessy, who was one-eighth Black, sat in a railroad car reserved for white passengers in "
              "Louisiana and was arrested under a law requiring separate railway cars for the races.",
     "question": "Does a state law requiring racially separate railway cars violate the Fourteenth Amendment?",
     "conclusion": "The Court upheld the law under the doctrine of separate but equal, a ruling later rejected.",
     "winner": "Ferguson", "decision": "majority opinion"},
    {"name": "Tinker v. Des Moines Independent Community School District", "term": "1968", "docket": "21",
     "facts": "Several students wore black armbands to school to protest the Vietnam War. The school district "
              "suspended them under a policy adopted to ban the armbands.",
     "question": "Does banning students from wearing armbands as a symbolic protest violate their freedom of "
                 "speech?",
     "conclusion": "Students do not shed their constitutional rights at the schoolhouse gate; the silent, passive "
                   "protest could not be banned without evidence of substantial disruption.",
     "winner": "John F. Tinker", "decision": "majority opinion"},
    {"name": "Texas v. Johnson", "term": "1988", "docket": "88-155",
     "facts": "Gregory Lee Johnson burned an American flag outside the Republican National Convention in Dallas to "
              "protest government policies. He was convicted under a Texas law against desecrating a venerated "
              "object.",
     "question": "Is burning the American flag as political protest speech protected by the First Amendment?",
     "conclusion": "Flag burning is expressive conduct protected by the First Amendment; the state may not punish "
                   "it merely because it is offensive.",
     "winner": "Gregory Lee Johnson", "decision": "majority opinion"},
    {"name": "New York Times Co. v. Sullivan", "term": "1963", "docket": "39",
     "facts": "A city commissioner in Montgomery, Alabama sued the New York Times over an advertisement supporting "
              "civil rights protesters that contained some factual errors about police conduct.",
     "question": "Must a public official prove more than falsehood to win a libel suit over criticism of official "
                 "conduct?",
     "conclusion": "A public official must prove actual malice, meaning the statement was made knowing it was false "
                   "or with reckless disregard for the truth.",
     "winner": "New York Times Company", "decision": "majority opinion"},
    {"name": "New York Times Co. v. United States", "term": "1970", "docket": "1873",
     "facts": "The Nixon administration sought to stop newspapers from publishing a classified study of the "
              "Vietnam War, known as the Pentagon Papers, claiming national security harm.",
     "question": "May the government prevent a newspaper from publishing classified documents in the name of "
                 "national security?",
     "conclusion": "The government failed to meet the heavy burden required to justify prior restraint; the "
                   "newspapers could publish.",
     "winner": "New York Times Company", "decision": "per curiam"},
    {"name": "Citizens United v. Federal Election Commission", "term": "2009", "docket": "08-205",
     "facts": "A nonprofit corporation produced a film critical of a presidential candidate and wanted to air it "
              "on cable during the primary season, which federal campaign finance law prohibited.",
     "question": "May the government ban independent political spending by corporations and unions?",
     "conclusion": "Limits on independent expenditures by corporations and unions violate the First Amendment "
                   "freedom of speech.",
     "winner": "Citizens United", "decision": "majority opinion"},
    {"name": "Engel v. Vitale", "term": "1961", "docket": "468",
     "facts": "A New York school board directed that a short nondenominational prayer be said aloud in classrooms "
              "at the start of each day. Parents of several students objected.",
     "question": "Does reading an official prayer in public schools violate the Establishment Clause?",
     "conclusion": "Government-composed prayer recited in public schools is an establishment of religion and is "
                   "unconstitutional, even if voluntary and nondenominational.",
     "winner": "Steven I. Engel", "decision": "majority opinion"},
    {"name": "Wisconsin v. Yoder", "term": "1971", "docket": "70-110",
     "facts": "Amish parents refused to send their children to school after the eighth grade, believing high "
              "school would endanger their religious way of life. They were fined under a compulsory attendance "
              "law.",
     "question": "Does compulsory school attendance past eighth grade violate the free exercise rights of Amish "
                 "parents?",
     "conclusion": "The state's interest in universal education did not outweigh the parents' free exercise of "
                   "religion; the Amish children could not be compelled to attend.",
     "winner": "Jonas Yoder", "decision": "majority opinion"},
    {"name": "Roe v. Wade", "term": "1971", "docket": "70-18",
     "facts": "A pregnant woman under the pseudonym Jane Roe challenged Texas laws making it a crime to obtain an "
              "abortion except to save the mother's life.",
     "question": "Does the Constitution protect a woman's right to choose to end a pregnancy?",
     "conclusion": "The right of privacy covered the abortion decision, subject to state interests that grow over "
                   "the course of pregnancy; the decision was overruled in 2022.",
     "winner": "Jane Roe", "decision": "majority opinion"},
    {"name": "Dobbs v. Jackson Women's Health Organization", "term": "2021", "docket": "19-1392",
     "facts": "Mississippi banned most abortions after fifteen weeks of pregnancy. The state's only abortion clinic "
              "challenged the law under existing precedent.",
     "question": "Are all pre-viability prohibitions on elective abortions unconstitutional?",
     "conclusion": "The Constitution does not confer a right to abortion; earlier precedents were overruled and the "
                   "question returned to elected representatives.",
     "winner": "Thomas E. Dobbs", "decision": "majority opinion"},
    {"name": "Griswold v. Connecticut", "term": "1964", "docket": "496",
     "facts": "The director of Planned Parenthood in Connecticut and a physician were convicted of giving married "
              "couples advice about contraception, which a state law forbade.",
     "question": "Does the Constitution protect the right of married couples to use contraception?",
     "conclusion": "The law violated a right to marital privacy found in the penumbras of several guarantees of the "
                   "Bill of Rights.",
     "winner": "Estelle T. Griswold", "decision": "majority opinion"},
    {"name": "Marbury v. Madison", "term": "1801", "docket": "0",
     "facts": "William Marbury was appointed justice of the peace in the final hours of the Adams administration, "
              "but the new Secretary of State James Madison refused to deliver his commission.",
     "question": "Does the Supreme Court have the power to strike down a law of Congress that conflicts with the "
                 "Constitution?",
     "conclusion": "Marbury had a right to his commission, but the law giving the Court power to issue the writ was "
                   "unconstitutional; this established judicial review.",
     "winner": "James Madison", "decision": "majority opinion"},
    {"name": "McCulloch v. Maryland", "term": "1818", "docket": "0",
     "facts": "Maryland imposed a tax on all banks not chartered by the state, aimed at the Second Bank of the "
              "United States. The bank's cashier, James McCulloch, refused to pay.",
     "question": "Could Congress charter a national bank, and could a state tax it?",
     "conclusion": "Congress had implied power to create the bank under the Necessary and Proper Clause, and a "
                   "state may not tax an instrument of the federal government.",
     "winner": "McCulloch", "decision": "majority opinion"},
    {"name": "Gibbons v. Ogden", "term": "1823", "docket": "0",
     "facts": "New York granted a monopoly to operate steamboats on its waters. Thomas Gibbons ran competing "
              "steamboats between New York and New Jersey under a federal coasting license.",
     "question": "May a state grant a monopoly over navigation that conflicts with federal regulation of "
                 "interstate commerce?",
     "conclusion": "The power to regulate interstate commerce, including navigation, belongs to Congress; the state "
                   "monopoly could not stand against the federal license.",
     "winner": "Thomas Gibbons", "decision": "majority opinion"},
    {"name": "Wickard v. Filburn", "term": "1942", "docket": "59",
     "facts": "Farmer Roscoe Filburn grew more wheat than his federal quota allowed, using the extra to feed his own "
              "animals. He was fined under the Agricultural Adjustment Act.",
     "question": "Can Congress regulate wheat grown for consumption on one's own farm under the Commerce Clause?",
     "conclusion": "Even home-grown wheat affects interstate commerce in the aggregate, so Congress may regulate it.",
     "winner": "Claude R. Wickard", "decision": "majority opinion"},
    {"name": "United States v. Lopez", "term": "1994", "docket": "93-1260",
     "facts": "A high school senior in San Antonio brought a concealed handgun to school and was charged under the "
              "federal Gun-Free School Zones Act.",
     "question": "Is the Gun-Free School Zones Act a valid exercise of Congress's power to regulate commerce?",
     "conclusion": "Possessing a gun near a school is not an economic activity substantially affecting interstate "
                   "commerce; the law exceeded Congress's power.",
     "winner": "Alfonso Lopez, Jr.", "decision": "majority opinion"},
    {"name": "National Federation of Independent Business v. Sebelius", "term": "2011", "docket": "11-393",
     "facts": "States and a business group challenged the Affordable Care Act's requirement that most people buy "
              "health insurance, and its expansion of Medicaid.",
     "question": "Is the individual mandate to buy health insurance within the powers of Congress?",
     "conclusion": "The mandate could not be upheld under the Commerce Clause but was valid as a tax; the Medicaid "
                   "expansion could not be forced on states by withholding existing funds.",
     "winner": "Kathleen Sebelius", "decision": "majority opinion"},
    {"name": "Youngstown Sheet & Tube Co. v. Sawyer", "term": "1951", "docket": "744",
     "facts": "During the Korean War, President Truman ordered the Secretary of Commerce to seize and operate the "
              "nation's steel mills to prevent a strike.",
     "question": "Did the President have constitutional authority to seize private steel mills without approval "
                 "from Congress?",
     "conclusion": "The seizure was unconstitutional; the President's power to make law was not supported by the "
                   "Constitution or an act of Congress.",
     "winner": "Youngstown Sheet & Tube Company", "decision": "majority opinion"},
    {"name": "United States v. Nixon", "term": "1973", "docket": "73-1766",
     "facts": "The special prosecutor investigating the Watergate break-in subpoenaed tape recordings of White House "
              "conversations. President Nixon refused, claiming executive privilege.",
     "question": "Is the President's claim of executive privilege absolute against a subpoena in a criminal case?",
     "conclusion": "Executive privilege is not absolute; the generalized interest in confidentiality must yield to "
                   "the need for evidence in a criminal trial, and the tapes had to be produced.",
     "winner": "United States", "decision": "majority opinion"},
    {"name": "Bush v. Gore", "term": "2000", "docket": "00-949",
     "facts": "After the 2000 presidential election, the Florida Supreme Court ordered a manual recount of ballots "
              "statewide. The Bush campaign asked the Court to stop the recount.",
     "question": "Did the Florida recount procedures violate the Equal Protection Clause?",
     "conclusion": "The recount lacked uniform standards for counting votes and violated equal protection; no "
                   "constitutional recount could be completed by the deadline.",
     "winner": "George W. Bush", "decision": "per curiam"},
    {"name": "Baker v. Carr", "term": "1961", "docket": "6",
     "facts": "Tennessee voters complained that the state had not redrawn its legislative districts in sixty years, "
              "so rural votes counted far more than urban votes.",
     "question": "Can federal courts hear challenges to the apportionment of state legislative districts?",
     "conclusion": "Legislative apportionment is a justiciable question that federal courts may decide under the "
                   "Equal Protection Clause.",
     "winner": "Charles W. Baker", "decision": "majority opinion"},
    {"name": "Shelby County v. Holder", "term": "2012", "docket": "12-96",
     "facts": "An Alabama county challenged the Voting Rights Act provisions that required certain states to get "
              "federal approval before changing election laws, based on a decades-old coverage formula.",
     "question": "Is the coverage formula of the Voting Rights Act still constitutional?",
     "conclusion": "The coverage formula is unconstitutional because it relies on outdated data and no longer "
                   "reflects current conditions.",
     "winner": "Shelby County", "decision": "majority opinion"},
    {"name": "Strickland v. Washington", "term": "1983", "docket": "82-1554",
     "facts": "David Washington pleaded guilty to murders and was sentenced to death. He claimed his lawyer was "
              "ineffective because he failed to seek character witnesses and a psychiatric report.",
     "question": "What standard decides whether a defense lawyer's performance was so poor that it violated the "
                 "right to counsel?",
     "conclusion": "A defendant must show that counsel's performance was deficient and that the deficiency "
                   "prejudiced the defense, meaning a reasonable probability of a different result.",
     "winner": "Washington", "decision": "majority opinion"},
    {"name": "Furman v. Georgia", "term": "1971", "docket": "69-5003",
     "facts": "Three men were sentenced to death under state laws that gave juries unguided discretion about "
              "imposing capital punishment.",
     "question": "Does imposing the death penalty in these cases constitute cruel and unusual punishment?",
     "conclusion": "The death penalty as then administered was arbitrary and capricious, violating the Eighth "
                   "Amendment.",
     "winner": "William Henry Furman", "decision": "per curiam"},
    {"name": "Kelo v. City of New London", "term": "2004", "docket": "04-108",
     "facts": "The city of New London used eminent domain to take private homes for a development plan intended to "
              "create jobs and increase tax revenue. Susette Kelo refused to sell her house.",
     "question": "Does taking private property for economic development satisfy the public use requirement of the "
                 "Fifth Amendment?",
     "conclusion": "Economic development qualifies as a public use; the city could take the homes with just "
                   "compensation.",
     "winner": "City of New London", "decision": "majority opinion"},
    {"name": "District of Columbia v. Heller", "term": "2007", "docket": "07-290",
     "facts": "A special police officer in Washington D.C. applied to register a handgun to keep at home and was "
              "refused under the city's ban on handguns.",
     "question": "Does the Second Amendment protect an individual's right to keep a handgun at home for "
                 "self-defense?",
     "conclusion": "The Second Amendment protects an individual right to possess a firearm for lawful purposes such "
                   "as self-defense at home; the handgun ban was unconstitutional.",
     "winner": "Dick Anthony Heller", "decision": "majority opinion"},
]
