#!lua name=rl
--[[
RL 0.2.0: RL's rate limiters as a Redis Functions library (Redis 7.0+, Valkey), for servers
that refuse MODULE LOAD. Same arguments, replies, errors, key formats, TTLs and
replicated effects as the module's commands (docs/library.md):

  redis-cli -x FUNCTION LOAD REPLACE < functions/rl.lua
-- <generated:usage>
  FCALL rl_fixed          1 key limit window                         [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_sliding        1 key limit window                         [COST n | REFUND n] [SHADOW]
  FCALL rl_bucket         1 key capacity tokens period               [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_gcra           1 key capacity tokens period               [COST n | REFUND n | DEBIT n] [DELAY max] [SHADOW]
  FCALL rl_slidingcounter 1 key limit window                         [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_acquire        1 key limit ttl id
  FCALL rl_penalty        1 key strikes window block max             [COST n] [SHADOW]
  FCALL rl_share          1 key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_quota          1 key limit unit                           [EVERY n] [ON anchor] [AT hh:mm] [TZ zone] [COST n | REFUND n | DEBIT n] [SHADOW]
  FCALL rl_release        1 key id
  FCALL rl_all numkeys key [key ...] policy [policy ...] [COST n | REFUND n | DEBIT n]
    (SHADOW before a policy makes it advisory: it never vetoes the call)
    (a GCRA policy may carry DELAY max: GCRA capacity tokens period [DELAY max])
    (in rl_all, PENALTY strikes window block max is only looked at, as COST 0; rl_penalty writes it)
  FCALL rl_version        0                                          the library's version
-- </generated:usage>

Lua numbers are doubles, exact only below 2^53. Every quantity that can go beyond
(a GCRA TAT in ns, a bucket level in its exact unit, products of counts and
durations) is computed with the exact integers below (`N`), which stay plain Lua
numbers below 2^53 and become arrays of base-10^7 limbs above: the results are the
module's, bit for bit, over the full argument ranges.

Errors are returned with redis.error_reply, never raised: no input makes the
script fail with a Lua runtime error.

The parts between `-- <generated:NAME>` and `-- </generated:NAME>` lines (the usage
above, the limits, the error texts, the policy list, the function map and the
registration) are written from RL's command table by `make lua`; `make lint` fails
when they are out of date. The rest is written by hand.
]]

------------------------------------------------------------------------------
-- The calendar (RL.QUOTA's periods): time zones, local dates and times, periods.
-- Built on the first RL.QUOTA call, as build() is on the first call. It reads
-- every zone as the module (jiff, with the same tz database) does: an instant's
-- offset from the zone's explicit transitions up to its last one, from its POSIX
-- TZ rule after; a local time in a gap moves forward by the gap, one in an
-- overlap is the earlier instant. Instants are ms since the epoch (doubles: exact
-- below 2^53); offsets are in seconds east of UTC.
------------------------------------------------------------------------------
local function calendar()
local floor, tconcat = math.floor, table.concat
local DAY = 86400000

-- <generated:calendar>
local TZDB = "2026f" -- the tz database's version
local MAX_EVERY = { day = 3650, week = 521, month = 120, year = 10 } -- a period is at most ten years
-- POSIX TZ rules (TZif footers).
local RULES = {
  "GMT0", "EAT-3", "CET-1", "WAT-1", "CAT-2", "EET-2EEST,M4.5.5/0,M10.5.4/24", "<+00>0",
  "CET-1CEST,M3.5.0,M10.5.0/3", "SAST-2", "EET-2", "HST10HDT,M3.2.0,M11.1.0",
  "AKST9AKDT,M3.2.0,M11.1.0", "AST4", "<-03>3", "EST5", "CST6", "<-04>4", "<-05>5",
  "MST7MDT,M3.2.0,M11.1.0", "CST6CDT,M3.2.0,M11.1.0", "MST7", "EST5EDT,M3.2.0,M11.1.0",
  "PST8PDT,M3.2.0,M11.1.0", "AST4ADT,M3.2.0,M11.1.0", "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",
  "CST5CDT,M3.2.0/0,M11.1.0/1", "<-03>3<-02>,M3.2.0,M11.1.0", "<-02>2",
  "<-04>4<-03>,M9.1.6/24,M4.1.6/24", "NST3:30NDT,M3.2.0,M11.1.0", "<+08>-8", "<+07>-7",
  "<+10>-10", "AEST-10AEDT,M10.1.0,M4.1.0/3", "<+05>-5", "NZST-12NZDT,M9.5.0,M4.1.0/3",
  "<+03>-3", "<+00>0<+02>-2,M3.5.0/1,M10.5.0/3", "<+12>-12", "<+04>-4",
  "EET-2EEST,M3.5.0/0,M10.5.0/0", "<+06>-6", "IST-5:30", "<+09>-9", "CST-8", "<+0530>-5:30",
  "EET-2EEST,M3.5.0/3,M10.5.0/4", "EET-2EEST,M3.4.4/50,M10.4.4/50", "HKT-8", "WIB-7", "WIT-9",
  "IST-2IDT,M3.4.4/26,M10.5.0", "<+0430>-4:30", "PKT-5", "<+0545>-5:45", "<+11>-11", "WITA-8",
  "PST-8", "KST-9", "<+0630>-6:30", "<+0330>-3:30", "JST-9", "<-01>1<+00>,M3.5.0/0,M10.5.0/1",
  "WET0WEST,M3.5.0/1,M10.5.0", "<-01>1", "ACST-9:30ACDT,M10.1.0,M4.1.0/3", "AEST-10",
  "ACST-9:30", "<+0845>-8:45", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "AWST-8",
  "<-06>6<-05>,M9.1.6/22,M4.1.6/22", "GMT0IST,M3.5.0/1,M10.5.0", "<-10>10", "<-11>11", "<-12>12",
  "<-06>6", "<-07>7", "<-08>8", "<-09>9", "<+01>-1", "<+13>-13", "<+14>-14", "<+02>-2", "UTC0",
  "GMT0BST,M3.5.0/1,M10.5.0", "MSK-3", "<-00>0", "HST10",
  "<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45", "ChST-10", "<-0930>9:30", "SST11",
  "<+11>-11<+12>,M10.1.0,M4.1.0/3",
}
-- A zone: its rule, and when it has explicit transitions from 2014-01-01 on the rule
-- does not give, the offset in force then and each transition (s, new offset in s).
local ZONES = {
  { 1 }, { 2 }, { 3 }, { 4 }, { 5 },
  {
    6, 7200, 1400191200, 10800, 1403816400, 7200, 1406844000, 10800, 1411678800, 7200,
    1682632800, 10800,
  },
  {
    7, 0, 1396144800, 3600, 1403920800, 0, 1406944800, 3600, 1414288800, 0, 1427594400, 3600,
    1434247200, 0, 1437271200, 3600, 1445738400, 0, 1459044000, 3600, 1465092000, 0,
    1468116000, 3600, 1477792800, 0, 1490493600, 3600, 1495332000, 0, 1498960800, 3600,
    1509242400, 0, 1521943200, 3600, 1526176800, 0, 1529200800, 3600, 1557021600, 0,
    1560045600, 3600, 1587261600, 0, 1590890400, 3600, 1618106400, 0, 1621130400, 3600,
    1648346400, 0, 1651975200, 3600, 1679191200, 0, 1682215200, 3600, 1710036000, 0,
    1713060000, 3600, 1740276000, 0, 1743904800, 3600, 1771120800, 0, 1774144800, 3600,
    1789866000, 0,
  },
  { 8 }, { 9 },
  {
    5, 10800, 1612126800, 7200,
  },
  {
    5, 10800, 1509483600, 7200,
  },
  {
    1, 0, 1514768400, 3600, 1546304400, 0,
  },
  { 10 },
  {
    5, 7200, 1396742400, 3600, 1410051600, 7200, 1428192000, 3600, 1441501200, 7200,
    1459641600, 3600, 1472950800, 7200, 1491091200, 3600, 1504400400, 7200, 1508796000, 7200,
  },
  { 11 }, { 12 }, { 13 }, { 14 },
  {
    14, -10800, 1395543600, -14400, 1412481600, -10800, 1426993200, -14400, 1443931200, -10800,
    1459047600, -14400, 1475380800, -10800, 1490497200, -14400, 1506830400, -10800,
    1521946800, -14400, 1538884800, -10800, 1553396400, -14400, 1570334400, -10800,
    1584846000, -14400, 1601784000, -10800, 1616900400, -14400, 1633233600, -10800,
    1648350000, -14400, 1664683200, -10800, 1679799600, -14400, 1696132800, -10800,
    1711249200, -14400, 1728187200, -10800, 1728961200, -10800,
  },
  { 15 },
  {
    16, -21600, 1396771200, -18000, 1414306800, -21600, 1428220800, -18000, 1445756400, -21600,
    1459670400, -18000, 1477810800, -21600, 1491120000, -18000, 1509260400, -21600,
    1522569600, -18000, 1540710000, -21600, 1554624000, -18000, 1572159600, -21600,
    1586073600, -18000, 1603609200, -21600, 1617523200, -18000, 1635663600, -21600,
    1648972800, -18000, 1667113200, -21600,
  },
  { 16 }, { 17 }, { 18 }, { 19 },
  {
    17, -10800, 1392519600, -14400, 1413691200, -10800, 1424574000, -14400, 1445140800, -10800,
    1456023600, -14400, 1476590400, -10800, 1487473200, -14400, 1508040000, -10800,
    1518922800, -14400, 1541304000, -10800, 1550372400, -14400,
  },
  {
    15, -21600, 1396771200, -18000, 1414306800, -21600, 1422777600, -18000,
  },
  {
    17, -16200, 1462086000, -14400,
  },
  { 20 },
  {
    16, -25200, 1396774800, -21600, 1414310400, -25200, 1428224400, -21600, 1445760000, -25200,
    1459674000, -21600, 1477814400, -25200, 1491123600, -21600, 1509264000, -25200,
    1522573200, -21600, 1540713600, -25200, 1554627600, -21600, 1572163200, -25200,
    1586077200, -21600, 1603612800, -25200, 1617526800, -21600, 1635667200, -25200,
    1648976400, -21600, 1667116800, -21600,
  },
  {
    19, -25200, 1394355600, -21600, 1414915200, -25200, 1425805200, -21600, 1446364800, -25200,
    1457859600, -21600, 1478419200, -25200, 1489309200, -21600, 1509868800, -25200,
    1520758800, -21600, 1541318400, -25200, 1552208400, -21600, 1572768000, -25200,
    1583658000, -21600, 1604217600, -25200, 1615712400, -21600, 1636272000, -25200,
    1647162000, -21600, 1667116800, -21600, 1669788000, -25200,
  },
  {
    14, -10800, 1398567600, -14400, 1410062400, -10800, 1463281200, -14400, 1471147200, -10800,
    1494730800, -14400, 1502596800, -10800, 1526180400, -14400, 1534046400, -10800,
    1554606000, -14400, 1567915200, -10800, 1586055600, -14400, 1599364800, -10800,
    1617505200, -14400, 1630814400, -10800, 1648954800, -14400, 1662868800, -10800,
    1680404400, -14400, 1693713600, -10800, 1712458800, -14400, 1725768000, -10800,
    1742439600, -10800,
  },
  { 21 },
  {
    21, -28800, 1394359200, -25200, 1414918800, -28800, 1425808800, -25200, 1446368400, -28800,
    1457863200, -25200, 1478422800, -28800, 1489312800, -25200, 1509872400, -28800,
    1520762400, -25200, 1541322000, -28800, 1552212000, -25200, 1572771600, -28800,
    1583661600, -25200, 1604214000, -25200,
  },
  { 22 },
  {
    16, -25200, 1394355600, -21600, 1414915200, -25200, 1425805200, -21600, 1446364800, -25200,
    1457859600, -21600, 1478419200, -25200, 1489309200, -21600, 1509868800, -25200,
    1520758800, -21600, 1541318400, -25200, 1552208400, -21600, 1572768000, -25200,
    1583658000, -21600, 1604217600, -25200, 1615712400, -21600, 1636272000, -25200,
    1647162000, -21600, 1667721600, -25200, 1678611600, -21600, 1699171200, -25200,
    1710061200, -21600, 1730620800, -25200, 1741510800, -21600, 1762070400, -25200,
    1772960400, -21600, 1793520000, -21600,
  },
  { 23 },
  {
    21, -28800, 1394359200, -25200, 1414918800, -28800, 1425808800, -25200,
  },
  { 24 },
  {
    25, -10800, 1396141200, -7200, 1414285200, -10800, 1427590800, -7200, 1445734800, -10800,
    1459040400, -7200, 1477789200, -10800, 1490490000, -7200, 1509238800, -10800,
    1521939600, -7200, 1540688400, -10800, 1553994000, -7200, 1572138000, -10800,
    1585443600, -7200, 1603587600, -10800, 1616893200, -7200, 1635642000, -10800,
    1648342800, -7200, 1667091600, -10800, 1679792400, -7200, 1698541200, -7200,
  },
  {
    22, -18000, 1394348400, -14400, 1414908000, -18000, 1425798000, -14400, 1520751600, -14400,
  },
  {
    26, -18000, 1394341200, -14400, 1414904400, -18000, 1425790800, -14400, 1446354000, -18000,
    1457845200, -14400, 1478408400, -18000, 1489294800, -14400, 1509858000, -18000,
    1520744400, -14400, 1541307600, -18000, 1552194000, -14400, 1572757200, -18000,
    1583643600, -14400, 1604206800, -18000, 1615698000, -14400, 1636261200, -18000,
    1647147600, -14400, 1667710800, -18000, 1678597200, -14400, 1699160400, -18000,
    1710046800, -14400, 1730610000, -18000, 1741496400, -14400, 1762059600, -18000,
    1772946000, -14400, 1825563600, -18000,
  },
  { 22 }, { 23 }, { 20 },
  {
    21, -25200, 1396774800, -21600, 1414310400, -25200, 1428224400, -21600, 1445760000, -25200,
    1459674000, -21600, 1477814400, -25200, 1491123600, -21600, 1509264000, -25200,
    1522573200, -21600, 1540713600, -25200, 1554627600, -21600, 1572163200, -25200,
    1586077200, -21600, 1603612800, -25200, 1617526800, -21600, 1635667200, -25200,
    1648976400, -21600, 1667116800, -25200,
  },
  {
    12, -28800, 1446372000, -32400, 1457866800, -28800, 1478426400, -32400, 1489316400, -28800,
    1509876000, -32400, 1520766000, -28800, 1541325600, -28800, 1547978400, -32400,
  },
  { 27 }, { 24 },
  {
    14, -7200, 1394337600, -10800, 1412485200, -7200, 1425787200, -10800,
  },
  { 28 },
  {
    20, -25200, 1394355600, -21600, 1414915200, -25200, 1425805200, -21600, 1446364800, -25200,
    1457859600, -21600, 1478419200, -25200, 1489309200, -21600, 1509868800, -25200,
    1520758800, -21600, 1541318400, -25200, 1552208400, -21600, 1572768000, -25200,
    1583658000, -21600, 1604217600, -25200, 1615712400, -21600, 1636272000, -25200,
    1647162000, -21600, 1667116800, -21600, 1669788000, -21600,
  },
  {
    22, -18000, 1394348400, -14400, 1414908000, -18000, 1425798000, -14400, 1446357600, -18000,
    1489302000, -14400,
  },
  {
    14, -10800, 1398567600, -14400, 1410062400, -10800, 1463281200, -14400, 1471147200, -10800,
    1480820400, -10800,
  },
  {
    15, -21600, 1394352000, -18000, 1414911600, -21600, 1425801600, -18000, 1446361200, -21600,
    1457856000, -18000, 1478415600, -21600, 1489305600, -18000, 1509865200, -21600,
    1520755200, -18000, 1541314800, -21600, 1552204800, -18000, 1572764400, -21600,
    1583654400, -18000, 1604214000, -21600, 1615708800, -18000, 1636268400, -21600,
    1647158400, -18000, 1667718000, -21600, 1678608000, -18000, 1699167600, -21600,
    1710057600, -18000, 1730617200, -21600, 1741507200, -18000, 1762066800, -21600,
    1772956800, -18000, 1793516400, -18000,
  },
  {
    29, -10800, 1398567600, -14400, 1410062400, -10800, 1463281200, -14400, 1471147200, -10800,
    1494730800, -14400, 1502596800, -10800, 1526180400, -14400, 1534046400, -10800,
    1554606000, -14400, 1567915200, -10800, 1586055600, -14400, 1599364800, -10800,
    1617505200, -14400, 1630814400, -10800, 1648954800, -14400, 1662868800, -10800,
    1680404400, -14400,
  },
  {
    14, -7200, 1392516000, -10800, 1413687600, -7200, 1424570400, -10800, 1445137200, -7200,
    1456020000, -10800, 1476586800, -7200, 1487469600, -10800, 1508036400, -7200,
    1518919200, -10800, 1541300400, -7200, 1550368800, -10800,
  },
  {
    25, -3600, 1396141200, 0, 1414285200, -3600, 1427590800, 0, 1445734800, -3600, 1459040400, 0,
    1477789200, -3600, 1490490000, 0, 1509238800, -3600, 1521939600, 0, 1540688400, -3600,
    1553994000, 0, 1572138000, -3600, 1585443600, 0, 1603587600, -3600, 1616893200, 0,
    1635642000, -3600, 1648342800, 0, 1667091600, -3600, 1679792400, 0, 1698541200, -3600,
    1711846800, -3600,
  },
  { 30 },
  {
    21, -28800, 1394359200, -25200, 1414918800, -28800, 1425808800, -25200, 1446368400, -28800,
    1457863200, -25200, 1478422800, -28800, 1489312800, -25200, 1509872400, -28800,
    1520762400, -25200, 1541322000, -28800, 1552212000, -25200, 1572771600, -28800,
    1583661600, -25200, 1604221200, -28800, 1615716000, -25200, 1636275600, -28800,
    1647165600, -25200, 1667725200, -28800, 1678615200, -25200, 1699174800, -28800,
    1710064800, -25200, 1730624400, -28800, 1741514400, -25200, 1762074000, -28800,
    1772964000, -25200, 1793523600, -25200,
  },
  {
    31, 28800, 1477065600, 39600, 1520701200, 28800, 1538856000, 39600, 1552752000, 28800,
    1570129200, 39600, 1583596800, 28800, 1601740860, 39600, 1615640400, 28800, 1633190460, 39600,
    1647090000, 28800, 1664640060, 39600, 1678291200, 28800,
  },
  { 32 }, { 33 }, { 34 }, { 35 }, { 36 }, { 37 }, { 38 },
  {
    35, 25200, 1702839600, 18000,
  },
  {
    35, 21600, 1709229600, 18000,
  },
  {
    37, 7200, 1395957600, 10800, 1414706400, 7200, 1427407200, 10800, 1446156000, 7200,
    1459461600, 10800, 1477605600, 7200, 1490911200, 10800, 1509055200, 7200, 1522360800, 10800,
    1540504800, 7200, 1553810400, 10800, 1571954400, 7200, 1585260000, 10800, 1604008800, 7200,
    1616709600, 10800, 1635458400, 7200, 1645740000, 10800, 1666908000, 10800,
  },
  { 39 },
  {
    40, 14400, 1396137600, 18000, 1414281600, 14400, 1427587200, 18000, 1445731200, 14400,
  },
  {
    32, 25200, 1414263600, 21600, 1459022400, 25200,
  },
  { 41 }, { 42 }, { 31 }, { 43 },
  {
    44, 36000, 1414252800, 28800, 1459015200, 32400,
  },
  {
    31, 28800, 1427479200, 32400, 1443193200, 28800, 1458928800, 32400, 1474642800, 28800,
  },
  { 45 }, { 46 },
  {
    37, 7200, 1395957600, 10800, 1414702800, 7200, 1427407200, 10800, 1446152400, 7200,
    1458856800, 10800, 1477602000, 7200, 1490911200, 10800, 1509051600, 7200, 1522360800, 10800,
    1540501200, 7200, 1553810400, 10800, 1571950800, 7200, 1585260000, 10800, 1604005200, 7200,
    1616709600, 10800, 1635454800, 7200, 1648159200, 10800, 1666904400, 10800,
  },
  { 44 }, { 40 },
  {
    47, 7200, 1396141200, 10800, 1414285200, 7200, 1427590800, 10800, 1445734800, 7200,
    1459040400, 10800, 1473282000, 10800, 1509238800, 7200,
  },
  {
    48, 7200, 1395957600, 10800, 1414098000, 7200, 1427493600, 10800, 1445551200, 7200,
    1458946800, 10800, 1477692000, 7200, 1490396400, 10800, 1509141600, 7200, 1521846000, 10800,
    1540591200, 7200, 1553810400, 10800, 1572037200, 7200, 1585346400, 10800, 1603490400, 7200,
    1616796000, 10800, 1635458400, 7200, 1648332000, 10800, 1666998000, 7200, 1682726400, 10800,
    1698447600, 7200, 1713571200, 10800, 1729897200, 7200, 1744416000, 10800, 1761346800, 7200,
    1774656000, 10800, 1792796400, 7200, 1806105600, 10800, 1824850800, 7200, 1837555200, 10800,
    1856300400, 7200, 1869004800, 10800, 1887750000, 7200, 1901059200, 10800, 1919199600, 7200,
    1932508800, 10800, 1950649200, 7200, 1963958400, 10800, 1982703600, 7200, 1995408000, 10800,
    2014153200, 7200, 2026857600, 10800, 2045602800, 7200, 2058307200, 10800, 2077052400, 7200,
    2090361600, 10800, 2107897200, 7200, 2121811200, 10800, 2138742000, 7200, 2153260800, 10800,
    2168982000, 7200, 2184710400, 10800, 2199826800, 7200, 2216160000, 10800, 2230066800, 7200,
    2234304000, 10800, 2234905200, 7200, 2248214400, 10800, 2260911600, 7200, 2264544000, 10800,
    2266354800, 7200, 2279664000, 10800, 2291756400, 7200, 2295388800, 10800, 2297804400, 7200,
    2311113600, 10800, 2321996400, 7200, 2326233600, 10800, 2329254000, 7200, 2342563200, 10800,
    2352841200, 7200, 2356473600, 10800, 2361308400, 7200, 2374012800, 10800, 2383686000, 7200,
    2387318400, 10800, 2392758000, 7200, 2405462400, 10800, 2413926000, 7200, 2418163200, 10800,
    2424207600, 7200, 2437516800, 10800, 2444770800, 7200, 2448403200, 10800, 2455657200, 7200,
    2468966400, 10800, 2475010800, 7200, 2479248000, 10800, 2487106800, 7200, 2500416000, 10800,
    2505855600, 7200, 2509488000, 10800, 2519161200, 7200, 2531865600, 10800, 2536700400, 7200,
    2540332800, 10800, 2550610800, 7200, 2563315200, 10800, 2566940400, 7200, 2571177600, 10800,
    2582060400, 7200, 2595369600, 10800, 2597785200, 7200, 2601417600, 10800, 2613510000, 7200,
    2626819200, 10800, 2628025200, 7200, 2632262400, 10800, 2644959600, 7200, 2658268800, 10800,
    2658870000, 7200, 2663107200, 10800, 2676409200, 7200, 2693347200, 10800, 2708463600, 7200,
    2724192000, 10800, 2739913200, 7200, 2754432000, 10800, 2771362800, 7200, 2785276800, 10800,
    2802812400, 7200, 2816121600, 10800, 2834262000, 7200, 2847571200, 10800, 2866316400, 7200,
    2879020800, 10800, 2897766000, 7200, 2910470400, 10800, 2929215600, 7200, 2941920000, 10800,
    2960665200, 7200, 2973974400, 10800, 2992114800, 7200, 3005424000, 10800, 3023564400, 7200,
    3036873600, 10800, 3055618800, 7200, 3068323200, 10800, 3087068400, 7200, 3099772800, 10800,
    3117913200, 7200, 3131827200, 10800, 3148758000, 7200, 3163276800, 10800, 3179602800, 7200,
    3194726400, 10800, 3209842800, 7200, 3226176000, 10800, 3240687600, 7200, 3244320000, 10800,
    3244921200, 7200, 3257625600, 10800, 3271532400, 7200, 3275164800, 10800, 3276370800, 7200,
    3289075200, 10800, 3301772400, 7200, 3306009600, 10800, 3307820400, 7200, 3321129600, 10800,
    3332617200, 7200, 3336249600, 10800, 3339270000, 7200, 3352579200, 10800, 3362857200, 7200,
    3367094400, 10800, 3370719600, 7200, 3384028800, 10800, 3393702000, 7200, 3397939200, 10800,
    3402774000, 7200, 3415478400, 10800, 3424546800, 7200, 3428179200, 10800, 3434223600, 7200,
    3446928000, 10800, 3454786800, 7200, 3459024000, 10800, 3465673200, 7200, 3478982400, 10800,
    3485631600, 7200, 3489264000, 10800, 3497122800, 7200, 3510432000, 10800, 3516476400, 7200,
    3520108800, 10800, 3528572400, 7200, 3541881600, 10800, 3546716400, 7200, 3550953600, 10800,
    3560022000, 7200, 3573331200, 10800, 3577561200, 7200, 3581193600, 10800, 3592076400, 7200,
    3604780800, 10800, 3607801200, 7200, 3612038400, 10800, 3623526000, 7200, 3636230400, 10800,
    3638646000, 7200, 3642883200, 10800, 3654975600, 7200, 3668284800, 10800, 3669490800, 7200,
    3673123200, 10800, 3686425200, 7200,
  },
  { 49 },
  {
    32, 25200, 1427482800, 28800, 1443196800, 25200, 1458932400, 28800, 1474646400, 25200,
  },
  {
    31, 32400, 1414256400, 28800,
  },
  {
    37, 7200, 1396227600, 10800, 1414285200, 7200, 1427590800, 10800, 1446944400, 7200,
    1459040400, 10800, 1473195600, 10800,
  },
  { 50 }, { 51 }, { 52 }, { 53 }, { 54 }, { 55 },
  {
    44, 36000, 1414252800, 32400,
  },
  {
    32, 28800, 1414260000, 25200,
  },
  {
    56, 43200, 1414245600, 36000, 1461427200, 39600,
  },
  { 57 }, { 58 }, { 47 },
  {
    32, 25200, 1414263600, 21600, 1469304000, 25200,
  },
  {
    42, 25200, 1414263600, 21600,
  },
  {
    59, 32400, 1439564400, 30600, 1525446000, 32400,
  },
  {
    35, 21600, 1545328800, 18000,
  },
  { 60 },
  {
    56, 39600, 1414249200, 36000, 1459008000, 39600,
  },
  { 59 },
  {
    56, 43200, 1414245600, 39600,
  },
  {
    61, 12600, 1395433800, 16200, 1411327800, 12600, 1426969800, 16200, 1442863800, 12600,
    1458505800, 16200, 1474399800, 12600, 1490128200, 16200, 1506022200, 12600, 1521664200, 16200,
    1537558200, 12600, 1553200200, 16200, 1569094200, 12600, 1584736200, 16200, 1600630200, 12600,
    1616358600, 16200, 1632252600, 12600, 1647894600, 16200, 1663788600, 12600,
  },
  { 62 },
  {
    32, 25200, 1414263600, 21600, 1464465600, 25200,
  },
  {
    33, 39600, 1414249200, 36000,
  },
  {
    35, 21600, 1414267200, 18000,
  },
  { 63 }, { 64 }, { 65 }, { 34 }, { 66 }, { 67 }, { 68 }, { 69 }, { 70 }, { 71 },
  {
    72, -18000, 1398567600, -21600, 1410062400, -18000, 1463281200, -21600, 1471147200, -18000,
    1494730800, -21600, 1502596800, -18000, 1526180400, -21600, 1534046400, -18000,
    1554606000, -21600, 1567915200, -18000, 1586055600, -21600, 1599364800, -18000,
    1617505200, -21600, 1630814400, -18000, 1648954800, -21600, 1662868800, -18000,
    1680404400, -21600,
  },
  { 73 }, { 74 }, { 75 }, { 76 }, { 77 }, { 78 }, { 79 }, { 80 }, { 81 }, { 56 }, { 82 }, { 83 },
  { 84 }, { 85 },
  {
    40, 14400, 1414274400, 10800, 1459033200, 14400,
  },
  { 86 }, { 47 },
  {
    47, 7200, 1396137600, 10800, 1414281600, 7200, 1427587200, 10800, 1445731200, 7200,
    1459036800, 10800, 1477785600, 7200, 1490486400, 10800, 1509235200, 7200, 1521936000, 10800,
    1540684800, 7200, 1553990400, 10800, 1572134400, 7200, 1585440000, 10800, 1603584000, 7200,
    1616889600, 10800, 1635638400, 7200, 1640988000, 7200,
  },
  {
    10, 10800, 1414278000, 7200,
  },
  {
    87, 14400, 1414274400, 10800,
  },
  {
    40, 14400, 1414274400, 10800, 1480806000, 14400,
  },
  {
    87, 7200, 1396137600, 14400, 1414274400, 10800,
  },
  {
    87, 14400, 1414274400, 10800, 1540681200, 14400, 1609020000, 10800,
  },
  { 88 }, { 89 }, { 90 },
  {
    82, 50400, 1396706400, 46800, 1411826400, 50400, 1428156000, 46800, 1443276000, 50400,
    1459605600, 46800, 1474725600, 50400, 1491055200, 46800, 1506175200, 50400, 1522504800, 46800,
    1538229600, 50400, 1554559200, 46800, 1569679200, 50400, 1586008800, 46800, 1601128800, 50400,
    1617458400, 46800,
  },
  {
    56, 36000, 1419696000, 39600,
  },
  {
    39, 46800, 1390050000, 43200, 1414850400, 46800, 1421503200, 43200, 1446300000, 46800,
    1452952800, 43200, 1478354400, 46800, 1484402400, 43200, 1509804000, 46800, 1515852000, 43200,
    1541253600, 46800, 1547301600, 43200, 1573308000, 46800, 1578751200, 43200, 1608386400, 46800,
    1610805600, 43200,
  },
  { 91 }, { 92 }, { 93 },
  {
    94, 41400, 1443882600, 39600, 1561899600, 39600,
  },
  {
    82, 46800, 1478350800, 50400, 1484398800, 46800,
  },
}
-- Every name, lower case, and its zone; a word ending in / names the area of those
-- after it.
local NAMES = {
  "africa/ abidjan=1 accra=1 addis_ababa=2 algiers=3 asmara=2 asmera=2 bamako=1 bangui=4",
  "banjul=1 bissau=1 blantyre=5 brazzaville=4 bujumbura=5 cairo=6 casablanca=7 ceuta=8",
  "conakry=1 dakar=1 dar_es_salaam=2 djibouti=2 douala=4 el_aaiun=7 freetown=1 gaborone=5",
  "harare=5 johannesburg=9 juba=10 kampala=2 khartoum=11 kigali=5 kinshasa=4 lagos=4",
  "libreville=4 lome=1 luanda=4 lubumbashi=5 lusaka=5 malabo=4 maputo=5 maseru=9 mbabane=9",
  "mogadishu=2 monrovia=1 nairobi=2 ndjamena=4 niamey=4 nouakchott=1 ouagadougou=1",
  "porto-novo=4 sao_tome=12 timbuktu=1 tripoli=13 tunis=3 windhoek=14 america/ adak=15",
  "anchorage=16 anguilla=17 antigua=17 araguaina=18 america/argentina/ buenos_aires=18",
  "catamarca=18 comodrivadavia=18 cordoba=18 jujuy=18 la_rioja=18 mendoza=18 rio_gallegos=18",
  "salta=18 san_juan=18 san_luis=18 tucuman=18 ushuaia=18 america/ aruba=17 asuncion=19",
  "atikokan=20 atka=15 bahia=18 bahia_banderas=21 barbados=17 belem=18 belize=22",
  "blanc-sablon=17 boa_vista=23 bogota=24 boise=25 buenos_aires=18 cambridge_bay=25",
  "campo_grande=26 cancun=27 caracas=28 catamarca=18 cayenne=18 cayman=20 chicago=29",
  "chihuahua=30 ciudad_juarez=31 coral_harbour=20 cordoba=18 costa_rica=22 coyhaique=32",
  "creston=33 cuiaba=26 curacao=17 danmarkshavn=1 dawson=34 dawson_creek=33 denver=25",
  "detroit=35 dominica=17 edmonton=36 eirunepe=24 el_salvador=22 ensenada=37 fort_nelson=38",
  "fort_wayne=35 fortaleza=18 glace_bay=39 godthab=40 goose_bay=39 grand_turk=41 grenada=17",
  "guadeloupe=17 guatemala=22 guayaquil=24 guyana=23 halifax=39 havana=42 hermosillo=33",
  "america/indiana/ indianapolis=35 knox=29 marengo=35 petersburg=43 tell_city=29 vevay=35",
  "vincennes=43 winamac=35 america/ indianapolis=35 inuvik=36 iqaluit=35 jamaica=20 jujuy=18",
  "juneau=16 america/kentucky/ louisville=35 monticello=35 america/ knox_in=29 kralendijk=17",
  "la_paz=23 lima=24 los_angeles=44 louisville=35 lower_princes=17 maceio=18 managua=22",
  "manaus=23 marigot=17 martinique=17 matamoros=45 mazatlan=46 mendoza=18 menominee=29",
  "merida=21 metlakatla=47 mexico_city=21 miquelon=48 moncton=49 monterrey=21 montevideo=50",
  "montreal=35 montserrat=17 nassau=35 new_york=35 nipigon=35 nome=16 noronha=51",
  "america/north_dakota/ beulah=45 center=29 new_salem=29 america/ nuuk=40 ojinaga=52",
  "panama=20 pangnirtung=35 paramaribo=18 phoenix=33 port-au-prince=53 port_of_spain=17",
  "porto_acre=24 porto_velho=23 puerto_rico=17 punta_arenas=54 rainy_river=55",
  "rankin_inlet=29 recife=18 regina=22 resolute=29 rio_branco=24 rosario=18 santa_isabel=37",
  "santarem=18 santiago=56 santo_domingo=17 sao_paulo=57 scoresbysund=58 shiprock=25",
  "sitka=16 st_barthelemy=17 st_johns=59 st_kitts=17 st_lucia=17 st_thomas=17 st_vincent=17",
  "swift_current=22 tegucigalpa=22 thule=39 thunder_bay=35 tijuana=37 toronto=35 tortola=17",
  "vancouver=60 virgin=17 whitehorse=34 winnipeg=55 yakutat=16 yellowknife=36 antarctica/",
  "casey=61 davis=62 dumontdurville=63 macquarie=64 mawson=65 mcmurdo=66 palmer=54",
  "rothera=18 south_pole=66 syowa=67 troll=68 vostok=69 arctic/ longyearbyen=8 asia/ aden=67",
  "almaty=70 amman=71 anadyr=72 aqtau=65 aqtobe=65 ashgabat=65 ashkhabad=65 atyrau=65",
  "baghdad=67 bahrain=67 baku=73 bangkok=62 barnaul=74 beirut=75 bishkek=76 brunei=77",
  "calcutta=78 chita=79 choibalsan=80 chongqing=81 chungking=81 colombo=82 dacca=76",
  "damascus=83 dhaka=76 dili=84 dubai=85 dushanbe=65 famagusta=86 gaza=87 harbin=81",
  "hebron=87 ho_chi_minh=62 hong_kong=88 hovd=89 irkutsk=90 istanbul=91 jakarta=92",
  "jayapura=93 jerusalem=94 kabul=95 kamchatka=72 karachi=96 kashgar=76 kathmandu=97",
  "katmandu=97 khandyga=98 kolkata=78 krasnoyarsk=99 kuala_lumpur=77 kuching=77 kuwait=67",
  "macao=81 macau=81 magadan=100 makassar=101 manila=102 muscat=85 nicosia=103",
  "novokuznetsk=62 novosibirsk=104 omsk=105 oral=65 phnom_penh=62 pontianak=92 pyongyang=106",
  "qatar=67 qostanay=70 qyzylorda=107 rangoon=108 riyadh=67 saigon=62 sakhalin=109",
  "samarkand=65 seoul=110 shanghai=81 singapore=77 srednekolymsk=111 taipei=81 tashkent=65",
  "tbilisi=85 tehran=112 tel_aviv=94 thimbu=76 thimphu=76 tokyo=113 tomsk=114",
  "ujung_pandang=101 ulaanbaatar=80 ulan_bator=80 urumqi=76 ust-nera=115 vientiane=62",
  "vladivostok=115 yakutsk=98 yangon=108 yekaterinburg=116 yerevan=85 atlantic/ azores=117",
  "bermuda=39 canary=118 cape_verde=119 faeroe=118 faroe=118 jan_mayen=8 madeira=118",
  "reykjavik=1 south_georgia=51 st_helena=1 stanley=18 australia/ act=120 adelaide=121",
  "brisbane=122 broken_hill=121 canberra=120 currie=64 darwin=123 eucla=124 hobart=64",
  "lhi=125 lindeman=122 lord_howe=125 melbourne=120 north=123 nsw=120 perth=126",
  "queensland=122 south=121 sydney=120 tasmania=64 victoria=120 west=126 yancowinna=121",
  "brazil/ acre=24 denoronha=51 east=57 west=23 canada/ atlantic=39 central=55 eastern=35",
  "mountain=36 newfoundland=59 pacific=60 saskatchewan=22 yukon=34 / cet=8 chile/",
  "continental=56 easterisland=127 / cst6cdt=29 cuba=42 eet=103 egypt=6 eire=128 est=20",
  "est5edt=35 etc/ gmt=1 gmt+0=1 gmt+1=119 gmt+10=129 gmt+11=130 gmt+12=131 gmt+2=51",
  "gmt+3=18 gmt+4=23 gmt+5=24 gmt+6=132 gmt+7=133 gmt+8=134 gmt+9=135 gmt-0=1 gmt-1=136",
  "gmt-10=63 gmt-11=137 gmt-12=72 gmt-13=138 gmt-14=139 gmt-2=140 gmt-3=67 gmt-4=85 gmt-5=65",
  "gmt-6=76 gmt-7=62 gmt-8=77 gmt-9=84 gmt0=1 greenwich=1 uct=141 universal=141 utc=141",
  "zulu=141 europe/ amsterdam=8 andorra=8 astrakhan=142 athens=103 belfast=143 belgrade=8",
  "berlin=8 bratislava=8 brussels=8 bucharest=144 budapest=8 busingen=8 chisinau=145",
  "copenhagen=8 dublin=128 gibraltar=8 guernsey=143 helsinki=103 isle_of_man=143 istanbul=91",
  "jersey=143 kaliningrad=146 kiev=103 kirov=147 kyiv=103 lisbon=118 ljubljana=8 london=143",
  "luxembourg=8 madrid=8 malta=8 mariehamn=103 minsk=67 monaco=8 moscow=147 nicosia=103",
  "oslo=8 paris=8 podgorica=8 prague=8 riga=144 rome=8 samara=85 san_marino=8 sarajevo=8",
  "saratov=148 simferopol=149 skopje=8 sofia=144 stockholm=8 tallinn=144 tirane=8",
  "tiraspol=145 ulyanovsk=142 uzhgorod=103 vaduz=8 vatican=8 vienna=8 vilnius=144",
  "volgograd=150 warsaw=8 zagreb=8 zaporozhye=103 zurich=8 / factory=151 gb=143 gb-eire=143",
  "gmt=1 gmt+0=1 gmt-0=1 gmt0=1 greenwich=1 hongkong=88 hst=152 iceland=1 indian/",
  "antananarivo=2 chagos=76 christmas=62 cocos=108 comoro=2 kerguelen=65 mahe=85 maldives=65",
  "mauritius=85 mayotte=2 reunion=85 / iran=112 israel=94 jamaica=20 japan=113 kwajalein=72",
  "libya=13 met=8 mexico/ bajanorte=37 bajasur=46 general=21 / mst=33 mst7mdt=25 navajo=25",
  "nz=66 nz-chat=153 pacific/ apia=154 auckland=66 bougainville=155 chatham=153 chuuk=63",
  "easter=127 efate=137 enderbury=138 fakaofo=138 fiji=156 funafuti=72 galapagos=132",
  "gambier=135 guadalcanal=137 guam=157 honolulu=152 johnston=152 kanton=138 kiritimati=139",
  "kosrae=137 kwajalein=72 majuro=72 marquesas=158 midway=159 nauru=72 niue=130 norfolk=160",
  "noumea=137 pago_pago=159 palau=84 pitcairn=134 pohnpei=137 ponape=137 port_moresby=63",
  "rarotonga=129 saipan=157 samoa=159 tahiti=129 tarawa=72 tongatapu=161 truk=63 wake=72",
  "wallis=72 yap=63 / poland=8 portugal=118 prc=81 pst8pdt=44 roc=81 rok=110 singapore=77",
  "turkey=91 uct=141 universal=141 us/ alaska=16 aleutian=15 arizona=33 central=29",
  "east-indiana=35 eastern=35 hawaii=152 indiana-starke=29 michigan=35 mountain=25",
  "pacific=44 samoa=159 / utc=141 w-su=147 wet=118 zulu=141",
}
-- </generated:calendar>

-- floor(a / b) and its remainder, for integers |a| < 2^53 (negative a too).
local function fdiv(a, b)
  local q = floor(a / b)
  return q, a - q * b
end

-- Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's).
local function days_from_civil(y, m, d)
  if m <= 2 then
    y = y - 1
  end
  local era = fdiv(y, 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + floor(yoe / 4) - floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function civil_from_days(z)
  z = z + 719468
  local era = fdiv(z, 146097)
  local doe = z - era * 146097
  local yoe = floor((doe - floor(doe / 1460) + floor(doe / 36524) - floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + floor(yoe / 4) - floor(yoe / 100))
  local mp = floor((5 * doy + 2) / 153)
  local d = doy - floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400
  return m <= 2 and y + 1 or y, m, d
end

local function leap(y)
  return y % 4 == 0 and (y % 100 ~= 0 or y % 400 == 0)
end

local MONTH_DAYS = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }

local function month_days(y, m)
  return (m == 2 and leap(y)) and 29 or MONTH_DAYS[m]
end

-- The UTC (or wall clock) year of an instant (or local time) in ms.
local function year_of(ms)
  return (civil_from_days((fdiv(ms, DAY))))
end

-- POSIX TZ rules ----------------------------------------------------------------
-- std [offset] [dst [offset] ,start[/time],end[/time]], with the TZif v3+
-- extensions (transition hours -167 ..= 167). A rule: {std, dst, start, stop},
-- offsets in s east of UTC; start and stop {kind = "J" | "n" | "M", ..., time = s}.

-- [+-]hh[:mm[:ss]] at s[i..]: seconds (signed) and the next position, or nil.
local function hms(s, i)
  local sign, h, j = s:match("^([+-]?)(%d+)()", i)
  if not h then
    return nil
  end
  local v = tonumber(h) * 3600
  local m, k = s:match("^:(%d+)()", j)
  if m then
    v, j = v + tonumber(m) * 60, k
    local sec, l = s:match("^:(%d+)()", j)
    if sec then
      v, j = v + tonumber(sec), l
    end
  end
  return sign == "-" and -v or v, j
end

-- An abbreviation (<+0530> or EST): the position after it, or nil.
local function abbreviation(s, i)
  if s:sub(i, i) == "<" then
    local j = s:find(">", i, true)
    return j and j + 1
  end
  local a, b = s:find("^%a+", i)
  return a and b - a >= 2 and b + 1 or nil
end

-- A transition's day and time at s[i..]: the spec and the next position, or nil.
local function transition(s, i)
  local spec, j
  local n, k = s:match("^J(%d+)()", i)
  if n then
    spec, j = { kind = "J", day = tonumber(n) }, k
  else
    local m, w, d, l = s:match("^M(%d+)%.(%d)%.(%d)()", i)
    if m then
      spec, j = { kind = "M", month = tonumber(m), week = tonumber(w), weekday = tonumber(d) }, l
    else
      n, k = s:match("^(%d+)()", i)
      if not n then
        return nil
      end
      spec, j = { kind = "n", day = tonumber(n) }, k
    end
  end
  spec.time = 7200
  if s:sub(j, j) == "/" then
    spec.time, j = hms(s, j + 1)
    if not spec.time then
      return nil
    end
  end
  return spec, j
end

local function parse_rule(s)
  local i = abbreviation(s, 1)
  local std
  if i then
    std, i = hms(s, i)
  end
  if not std then
    return nil
  end
  local rule = { std = -std }
  if i > #s then
    return rule
  end
  i = abbreviation(s, i)
  if not i then
    return nil
  end
  rule.dst = rule.std + 3600
  if s:sub(i, i) ~= "," then
    local dst
    dst, i = hms(s, i)
    if not dst then
      return nil
    end
    rule.dst = -dst
  end
  local j
  rule.start, j = transition(s, i + 1)
  if not rule.start or s:sub(j, j) ~= "," then
    return nil
  end
  rule.stop, j = transition(s, j + 1)
  if not rule.stop or j <= #s then
    return nil
  end
  return rule
end

-- The day (days since the epoch) a transition falls on in year y, or nil when
-- there is none (day 365 of a common year).
local function transition_day(spec, y)
  local jan1 = days_from_civil(y, 1, 1)
  if spec.kind == "J" then
    return jan1 + spec.day - 1 + ((leap(y) and spec.day >= 60) and 1 or 0)
  elseif spec.kind == "n" then
    if spec.day == 365 and not leap(y) then
      return nil
    end
    return jan1 + spec.day
  end
  local first = days_from_civil(y, spec.month, 1)
  -- Weekday 0 is Sunday; 1970-01-01 was a Thursday (4).
  local first_weekday = (first + 4) % 7
  if spec.week == 5 then
    local last = first + month_days(y, spec.month) - 1
    return last - (((last + 4) % 7 - spec.weekday) % 7)
  end
  return first + (spec.weekday - first_weekday) % 7 + 7 * (spec.week - 1)
end

-- A transition of year y as a civil time in ms less `offset` s, kept in year y
-- (before it: its first instant; after it: just before its end).
local function transition_at(spec, y, offset)
  local day = transition_day(spec, y)
  local first, after = days_from_civil(y, 1, 1) * DAY, days_from_civil(y + 1, 1, 1) * DAY
  if not day then
    return after - 0.5
  end
  local at = day * DAY + (spec.time - offset) * 1000
  if at < first then
    return first
  elseif at >= after then
    return after - 0.5
  end
  return at
end

-- Whether t is in [start, stop) (or out of [stop, start) when DST spans new year).
local function in_range(start, stop, t)
  if start <= stop then
    return start <= t and t < stop
  end
  return not (stop <= t and t < start)
end

-- DST's start and end in year y as UTC instants (ms).
local function dst_utc(rule, y)
  local start = transition_at(rule.start, y, rule.std)
  local stop = transition_at(rule.stop, y, rule.dst)
  -- DST all year: it starts on Jan 1 at 00:00 and ends (read in standard time)
  -- in another year.
  if start == days_from_civil(y, 1, 1) * DAY and year_of(stop + rule.std * 1000) ~= y then
    stop = days_from_civil(y + 1, 1, 1) * DAY - 0.5
  end
  return start, stop
end

local function rule_offset(rule, t)
  if not rule.dst then
    return rule.std
  end
  local start, stop = dst_utc(rule, year_of(t))
  return in_range(start, stop, t) and rule.dst or rule.std
end

-- The instant of local time l (ms) under a rule: a time in a gap takes the offset
-- before the gap, a time in an overlap the earlier instant.
local function rule_instant(rule, l)
  local std, dst = rule.std, rule.dst
  if not dst or dst == std then
    return l - std * 1000
  end
  local y = year_of(l)
  local start, stop = transition_at(rule.start, y, 0), transition_at(rule.stop, y, 0)
  local diff = (dst - std) * 1000
  local offset
  if diff < 0 then
    if in_range(start, stop, l) then
      offset = dst
    elseif start + diff <= l and l < start then
      offset = std -- an overlap: before it, standard time
    elseif stop <= l and l < stop - diff then
      offset = dst -- a gap: the offset before it
    else
      offset = std
    end
  elseif not in_range(start, stop, l) then
    offset = std
  elseif start <= l and l < start + diff then
    offset = std -- a gap
  elseif stop - diff <= l and l < stop then
    offset = dst -- an overlap
  else
    offset = dst
  end
  return l - offset * 1000
end

-- Zones --------------------------------------------------------------------------
-- A zone: {rule, at = {transition instants, ms}, offsets = {offset before at[1],
-- then after each}}. A fixed offset is a rule without DST.

local rules, zones, by_name, area = {}, {}, {}, ""
for _, line in ipairs(NAMES) do
  for word in line:gmatch("%S+") do
    if word:sub(-1) == "/" then
      area = word == "/" and "" or word
    else
      local place, row = word:match("^(.-)=(%d+)$")
      by_name[area .. place] = tonumber(row)
    end
  end
end

local function zone_row(row)
  if zones[row] then
    return zones[row]
  end
  local data = ZONES[row]
  local r = data[1]
  rules[r] = rules[r] or parse_rule(RULES[r])
  local z = { id = "z" .. row, rule = rules[r], at = {}, offsets = { data[2] } }
  for i = 3, #data, 2 do
    z.at[#z.at + 1] = data[i] * 1000
    z.offsets[#z.offsets + 1] = data[i + 1]
  end
  zones[row] = z
  return z
end

-- The zone an IANA name (any case) names, or nil.
local function named(name)
  local row = by_name[name:lower()]
  return row and zone_row(row)
end

local function fixed(offset)
  return { id = "f" .. offset, rule = { std = offset }, at = {}, offsets = {} }
end

-- How many of key(1), ..., key(n) (ascending) are at or before t.
local function count_upto(n, key, t)
  local lo, hi = 0, n
  while lo < hi do
    local mid = floor((lo + hi + 1) / 2)
    if key(mid) <= t then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return lo
end

-- The offset (s) in force at instant t (ms).
local function offset_at(z, t)
  local at = z.at
  if #at == 0 or t >= at[#at] then
    return rule_offset(z.rule, t)
  end
  return z.offsets[count_upto(#at, function(i)
    return at[i]
  end, t) + 1]
end

-- The instant of local time l (ms): each transition's local range is a gap (the
-- offset grows) or an overlap; l in one takes the offset before the transition.
local function instant(z, l)
  local at, offsets = z.at, z.offsets
  -- The last transition whose local range starts at or before l (the ranges come
  -- in order).
  local i = count_upto(#at, function(j)
    return at[j] + math.min(offsets[j], offsets[j + 1]) * 1000
  end, l)
  if i > 0 and l < at[i] + math.max(offsets[i], offsets[i + 1]) * 1000 then
    return l - offsets[i] * 1000
  end
  if i == #at then
    return rule_instant(z.rule, l)
  end
  return l - offsets[i + 1] * 1000
end

-- Periods ------------------------------------------------------------------------
-- A calendar: {first, len, months (false: days), day (a month's anchor day), at
-- (minutes after local midnight), zone}. Period k starts on day first + k·len
-- counted from 1970-01-01, or on `day` (clamped to the month's last) of month
-- first + k·len counted from 1970-01, at local `at`.

-- Instants are clamped into years ~1020 ..= ~8940, as the module clamps them.
local EARLIEST, LATEST = -30000000000000, 220000000000000

-- Period k's start instant.
local function start_of(c, k)
  local n = c.first + k * c.len
  local days = n
  if c.months then
    local y, m0 = fdiv(n, 12)
    local year, month = 1970 + y, m0 + 1
    days = days_from_civil(year, month, math.min(c.day, month_days(year, month)))
  end
  return instant(c.zone, days * DAY + c.at * 60000)
end

-- The period holding now: start <= now < end. The local date gives period k; a
-- start time of day (AT) or a DST change can make that one late or early: step
-- back, then forward, at most four times each, as the module does (a zone that
-- skipped a whole day could leave no period: then [now, now + 1)).
local function period(c, now)
  now = math.max(EARLIEST, math.min(LATEST, now))
  local days = fdiv(now + offset_at(c.zone, now) * 1000, DAY)
  local n = days
  if c.months then
    local y, m = civil_from_days(days)
    n = (y - 1970) * 12 + m - 1
  end
  local k = fdiv(n - c.first, c.len)
  local start = start_of(c, k)
  for _ = 1, 4 do
    if start <= now then
      break
    end
    k = k - 1
    start = start_of(c, k)
  end
  local stop = start_of(c, k + 1)
  for _ = 1, 4 do
    if stop > now then
      break
    end
    k, start = k + 1, stop
    stop = start_of(c, k + 1)
  end
  if start <= now and now < stop then
    return start, stop
  end
  return now, now + 1
end

-- The last period computed for each calendar (up to 64 of them), reused while
-- start <= now < end: a call within a period already seen reads no zone rules.
-- Periods tile time, so this answers what period() answers.
local memo, remembered = {}, 0

local function period_of(c, now)
  local last = memo[c.id]
  if last and last[1] <= now and now < last[2] then
    return last[1], last[2]
  end
  local start, stop = period(c, now)
  if not last then
    if remembered == 64 then
      memo, remembered = {}, 0
    end
    remembered = remembered + 1
  end
  memo[c.id] = { start, stop }
  return start, stop
end

-- Reading a calendar -----------------------------------------------------------

local WEEKDAYS = { mon = 0, tue = 1, wed = 2, thu = 3, fri = 4, sat = 5, sun = 6 }
local UTC = fixed(0)

-- An integer 1 ..= max in Redis's form (no sign, no leading zero), or nil.
local function small(s, max)
  local v = s:find("^[1-9]%d*$") and #s <= 6 and tonumber(s)
  return v and v <= max and v or nil
end

-- TZ: UTC, +HH:MM / -HH:MM up to 23:59, or a tz database name (any case).
local function zone(s)
  if s:lower() == "utc" then
    return UTC
  end
  local sign, h, m = s:match("^([+-])(%d%d):(%d%d)$")
  h, m = tonumber(h), tonumber(m)
  if h and h <= 23 and m <= 59 then
    return fixed((sign == "-" and -1 or 1) * (h * 3600 + m * 60))
  end
  return named(s)
end

-- A calendar from its unit and the values of EVERY, ON, AT and TZ (nil: not
-- given), read as the module reads them. A bad value gives nil and what is wrong:
-- "unit", "every" (and the unit), "on_day", "on" (and the unit), "at" or "tz".
local function parse(unit, every, on, at, tz)
  local u = unit:lower()
  local max = MAX_EVERY[u]
  if not max then
    return nil, "unit"
  end
  local n = every == nil and 1 or small(every, max)
  if not n then
    return nil, "every", u
  end
  local c = { first = 0, len = n, months = u == "month" or u == "year", day = 1, at = 0, zone = UTC }
  if u == "day" and on ~= nil then
    return nil, "on_day"
  elseif u == "week" then
    local weekday = on == nil and 0 or WEEKDAYS[on:lower()]
    if not weekday then
      return nil, "on", u
    end
    -- Weeks from the one holding 1970-01-01, a Thursday (3 from Monday).
    c.first, c.len = -((3 - weekday) % 7), 7 * n
  elseif u == "month" and on ~= nil then
    c.day = small(on, 31)
    if not c.day then
      return nil, "on", u
    end
  elseif u == "year" then
    c.len = 12 * n
    if on ~= nil then
      -- MM-DD, a date of a leap year: 02-29 starts on Feb 28 in common years.
      local mm, dd = on:match("^(%d%d)%-(%d%d)$")
      mm, dd = tonumber(mm), tonumber(dd)
      if not mm or mm < 1 or mm > 12 or dd < 1 or dd > month_days(2000, mm) then
        return nil, "on", u
      end
      c.first, c.day = mm - 1, dd
    end
  end
  if at ~= nil then
    local hh, mm = at:match("^(%d%d):(%d%d)$")
    hh, mm = tonumber(hh), tonumber(mm)
    if not hh or hh > 23 or mm > 59 then
      return nil, "at"
    end
    c.at = hh * 60 + mm
  end
  if tz ~= nil then
    c.zone = zone(tz)
    if not c.zone then
      return nil, "tz"
    end
  end
  c.id = tconcat({ c.first, c.len, tostring(c.months), c.day, c.at, c.zone.id }, " ")
  return c
end

return { parse = parse, period = period, period_of = period_of, named = named, offset_at = offset_at, instant = instant, TZDB = TZDB }
end

-- At FUNCTION LOAD only `redis` exists (no math, string, table, tonumber): the
-- library is built on its first call, when the script globals are there, and kept.
local function build()
local floor, fmod, ceil = math.floor, math.fmod, math.ceil
local sfmt, ssub, sbyte, schar = string.format, string.sub, string.byte, string.char
local tconcat, unpack = table.concat, unpack

local BASE = 10000000 -- one limb: 10^7 (a limb product stays below 2^53)
local TWO53 = 9007199254740992
-- <generated:limits>
local MAX_COUNT = 9007199254740991 -- 2^53 - 1: the largest count, cost and reply field
local MAX_DURATION = 315360000000 -- 3650d in ms
local SLIDING_MAX = 100000 -- rl.sliding-max-limit's default (a library has no settings)
local MAX_KEYS = 16 -- keys in one rl_all call
local MAX_ID = 256 -- bytes in a lease id
local MAX_TENANT = 256 -- bytes in an RL.SHARE tenant
local MAX_WEIGHT = 10000 -- an RL.SHARE tenant's largest weight
local SHARE_MAX_TENANTS = 10000 -- rl.share-max-tenants' default (a library has no settings)
local OPTION_WORDS = { COST = true, REFUND = true, DEBIT = true, DELAY = true, EVERY = true, ON = true, AT = true, TZ = true, SHADOW = true }
-- </generated:limits>
-- <generated:errors>
local ERRORS = {
  wrong_type = "WRONGTYPE Operation against a key holding the wrong kind of value",
  not_fixed = "ERR key does not hold an RL.FIXED counter (a non-negative integer with an expiry)",
  not_sliding = "ERR key does not hold an RL.SLIDING log (a sorted set of ms timestamps)",
  not_bucket = "ERR key does not hold an RL.BUCKET (a hash with numeric fields tokens and ts)",
  not_gcra = "ERR key does not hold a GCRA state (a non-negative integer TAT in ns)",
  not_slidingcounter = 'ERR key does not hold an RL.SLIDINGCOUNTER (a string "<start> <current> <previous>")',
  not_leases = "ERR key does not hold an RL.ACQUIRE lease set (a sorted set of lease ends in ms)",
  not_penalty = 'ERR key does not hold an RL.PENALTY state (a string "<count> <window_end> <level> <blocked_until>")',
  not_quota = "ERR key does not hold an RL.QUOTA counter (a non-negative integer with an expiry)",
  rate_too_high = "ERR tokens per period is too high for a GCRA limiter: at most one token per nanosecond (1000000 per ms)",
  sliding_limit = "ERR limit must be an integer from 1 to 100000 for RL.SLIDING, which keeps one entry per unit (rl.sliding-max-limit); use RL.BUCKET for larger limits",
  lease_limit = "ERR limit must be an integer from 1 to 100000 for RL.ACQUIRE, which keeps one entry per lease (rl.sliding-max-limit)",
  lease_id = "ERR id must be 1 to 256 bytes",
  lease_refund = "ERR syntax error: REFUND does not apply to ACQUIRE: end a lease with RL.RELEASE",
  block_above_max = "ERR block must be at most max",
  delay_without_gcra = "ERR syntax error: DELAY must follow a GCRA policy",
  shadow_without_policy = "ERR syntax error: SHADOW must come before a policy",
  numkeys = "ERR numkeys must be an integer from 1 to 16",
  not_share = "ERR key does not hold an RL.SHARE budget (a hash of the fields g, t:<tenant>, s:<n> and i:<n> that RL.SHARE writes)",
  tenant = "ERR tenant must be 1 to 256 bytes",
  weight = "ERR weight must be an integer from 1 to 10000",
  share_rate_too_high = "ERR tokens per period is too high for an RL.SHARE budget: at most one token per nanosecond (1000000 per ms)",
  -- With the argument named.
  count = function(name) return "ERR " .. name .. " must be an integer from 1 to 9007199254740991" end,
  cost = function(name) return "ERR " .. name .. " must be an integer from 0 to 9007199254740991" end,
  duration = function(name) return "ERR " .. name .. " must be a duration from 1ms to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)" end,
  delay = function(name) return "ERR " .. name .. " must be a duration from 0 to 3650d: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds)" end,
  unknown_policy = function(word) return "ERR syntax error: unknown policy '" .. word .. "', expected FIXED, SLIDING, BUCKET, GCRA, SLIDINGCOUNTER, ACQUIRE, PENALTY, SHARE or QUOTA" end,
  share_tenants = function(max) return "ERR the budget already remembers " .. max .. " tenants (rl.share-max-tenants): a new tenant is refused until one is forgotten, a period after its last call" end,
  -- RL.QUOTA's calendar (EVERY and ON by unit).
  quota_unit = "ERR unit must be day, week, month or year",
  quota_on_day = "ERR syntax error: ON does not apply to unit day, whose periods start every day at AT",
  quota_at = "ERR AT must be a time of day hh:mm from 00:00 to 23:59",
  quota_every = { day = "ERR EVERY must be an integer from 1 to 3650", week = "ERR EVERY must be an integer from 1 to 521", month = "ERR EVERY must be an integer from 1 to 120", year = "ERR EVERY must be an integer from 1 to 10" },
  quota_on = { week = "ERR ON must be mon, tue, wed, thu, fri, sat or sun for unit week", month = "ERR ON must be a day of the month from 1 to 31 for unit month", year = "ERR ON must be a date MM-DD from 01-01 to 12-31 for unit year" },
  quota_tz = function(zone) return "ERR unknown time zone '" .. zone .. "': TZ takes UTC, an offset +HH:MM or -HH:MM up to 23:59, or a tz database name such as America/New_York" end,
}
-- </generated:errors>

-- Errors travel as {rl = "CODE message"} through error(), caught once per call.
local function fail(msg)
  error({ rl = msg }, 0)
end

------------------------------------------------------------------------------
-- N: exact non-negative integers (and small signed ones).
-- A value is a Lua number when |v| < 2^53, else an array of base-10^7 limbs,
-- little-endian, never negative.
------------------------------------------------------------------------------

local function internal(what)
  error({ internal = what }, 0)
end

local function split(x) -- number 0 <= x < 2^53 -> limbs
  if x < 0 then
    internal("negative operand")
  end
  local t, i = {}, 0
  while x > 0 do
    local r = fmod(x, BASE)
    i = i + 1
    t[i] = r
    x = (x - r) / BASE
  end
  return t
end

local function limbs(a)
  if type(a) == "number" then
    return split(a)
  end
  return a
end

local function norm(t) -- strips zero limbs; below 2^53 becomes a number
  local n = #t
  while n > 0 and t[n] == 0 do
    t[n] = nil
    n = n - 1
  end
  if n <= 2 then
    return (t[1] or 0) + (t[2] or 0) * BASE
  end
  if n == 3 and t[3] <= 90 then
    local v = t[1] + t[2] * BASE + t[3] * 1e14
    if v < TWO53 then
      return v
    end
  end
  return t
end

local function cmp(a, b)
  local na, nb = type(a) == "number", type(b) == "number"
  if na and nb then
    if a < b then
      return -1
    elseif a > b then
      return 1
    end
    return 0
  end
  if na then
    return -1 -- a number is below 2^53, a table at or above
  end
  if nb then
    return 1
  end
  if #a ~= #b then
    return #a < #b and -1 or 1
  end
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then
      return a[i] < b[i] and -1 or 1
    end
  end
  return 0
end

local function add(a, b)
  if type(a) == "number" and type(b) == "number" then
    local s = a + b
    if s < TWO53 and s > -TWO53 then
      return s
    end
  end
  local x, y = limbs(a), limbs(b)
  local t, carry = {}, 0
  for i = 1, math.max(#x, #y) do
    local s = (x[i] or 0) + (y[i] or 0) + carry
    if s >= BASE then
      t[i] = s - BASE
      carry = 1
    else
      t[i] = s
      carry = 0
    end
  end
  if carry > 0 then
    t[#t + 1] = carry
  end
  return norm(t)
end

local function sub(a, b) -- a - b; a >= b unless both are numbers
  if type(a) == "number" and type(b) == "number" then
    local s = a - b
    if s < TWO53 and s > -TWO53 then
      return s
    end
  end
  local x, y = limbs(a), limbs(b)
  local t, borrow = {}, 0
  for i = 1, #x do
    local s = x[i] - (y[i] or 0) - borrow
    if s < 0 then
      t[i] = s + BASE
      borrow = 1
    else
      t[i] = s
      borrow = 0
    end
  end
  if borrow > 0 or #y > #x then
    internal("negative difference")
  end
  return norm(t)
end

local function mul(a, b)
  if type(a) == "number" and type(b) == "number" then
    local p = a * b
    if p < TWO53 and p > -TWO53 then
      return p
    end
  end
  local x, y = limbs(a), limbs(b)
  if #x == 0 or #y == 0 then
    return 0
  end
  local t = {}
  for i = 1, #x + #y do
    t[i] = 0
  end
  for i = 1, #x do
    local carry, xi = 0, x[i]
    for j = 1, #y do
      local s = t[i + j - 1] + xi * y[j] + carry
      local r = fmod(s, BASE)
      t[i + j - 1] = r
      carry = (s - r) / BASE
    end
    local k = i + #y
    while carry > 0 do
      local s = t[k] + carry
      local r = fmod(s, BASE)
      t[k] = r
      carry = (s - r) / BASE
      k = k + 1
    end
  end
  return norm(t)
end

local function tod(a) -- a double near a (for quotient estimates only)
  if type(a) == "number" then
    return a
  end
  local v = 0
  for i = #a, 1, -1 do
    v = v * BASE + a[i]
  end
  return v
end

-- floor(a / b) and a mod b, for a >= 0, b > 0.
local function divmod(a, b)
  if type(a) == "number" and type(b) == "number" then
    if a < 0 or b <= 0 then
      internal("division domain")
    end
    local r = fmod(a, b)
    return (a - r) / b, r
  end
  local q, r = 0, a
  while cmp(r, b) >= 0 do
    -- An underestimate of r / b with ~30 exact bits: r stays >= 0 and shrinks
    -- by about 2^-30 per step.
    local e = tod(r) / tod(b) * (1 - 2 ^ -40)
    local shift = 0
    while e >= 2 ^ 52 do
      e = e / BASE
      shift = shift + 1
    end
    local m = floor(e)
    local qe
    if m < 1 then
      qe = 1
    elseif shift == 0 then
      qe = m
    else
      local t, ml = {}, split(m)
      for i = 1, shift do
        t[i] = 0
      end
      for i = 1, #ml do
        t[shift + i] = ml[i]
      end
      qe = norm(t)
    end
    q = add(q, qe)
    r = sub(r, mul(qe, b))
  end
  return q, r
end

local function div(a, b)
  local q = divmod(a, b)
  return q
end

local function divceil(a, b)
  local q, r = divmod(a, b)
  if r ~= 0 then
    q = add(q, 1)
  end
  return q
end

local function nmin(a, b)
  return cmp(a, b) <= 0 and a or b
end

local function nmax(a, b)
  return cmp(a, b) >= 0 and a or b
end

local function satsub(a, b) -- max(a - b, 0)
  if cmp(a, b) <= 0 then
    return 0
  end
  return sub(a, b)
end

local function str(a) -- canonical decimal
  if type(a) == "number" then
    return sfmt("%d", a)
  end
  local parts = { sfmt("%d", a[#a]) }
  for i = #a - 1, 1, -1 do
    parts[#parts + 1] = sfmt("%07d", a[i])
  end
  return tconcat(parts)
end

local function num(s) -- a string of ASCII digits (leading zeros allowed)
  local t, i, last = {}, 0, #s
  while last > 0 do
    local first = last - 6
    if first < 1 then
      first = 1
    end
    i = i + 1
    t[i] = tonumber(ssub(s, first, last))
    last = first - 1
  end
  return norm(t)
end

-- cap: every reply duration and TTL is at most 2^53 - 1 ms.
local function cap(a)
  if cmp(a, MAX_COUNT) > 0 then
    return MAX_COUNT
  end
  return a
end

local function ms_until(t, now)
  if cmp(t, now) <= 0 then
    return 0
  end
  return cap(sub(t, now))
end

------------------------------------------------------------------------------
-- Signed exact integers, for a bucket's level (a debt makes it negative): a Lua
-- number (any sign, |v| < 2^53), an N table (>= 2^53), or {neg = t} for -t (t an
-- N table: below -2^53).
------------------------------------------------------------------------------

local function s_isneg(a)
  if type(a) == "number" then
    return a < 0
  end
  return a.neg ~= nil
end

local function s_mag(a) -- |a|, an N
  if type(a) == "number" then
    return a < 0 and -a or a
  end
  return a.neg or a
end

local function s_neg(m) -- -m for an N m
  if type(m) == "number" then
    return m == 0 and 0 or -m
  end
  return { neg = m }
end

local function s_cmp(a, b)
  local na, nb = s_isneg(a), s_isneg(b)
  if na ~= nb then
    return na and -1 or 1
  elseif na then
    return cmp(s_mag(b), s_mag(a))
  end
  return cmp(a, b)
end

local function s_add(a, b)
  if type(a) == "number" and type(b) == "number" then
    local v = a + b
    if v < TWO53 and v > -TWO53 then
      return v
    end
  end
  local na, nb = s_isneg(a), s_isneg(b)
  local ma, mb = s_mag(a), s_mag(b)
  if na == nb then
    local m = add(ma, mb)
    return na and s_neg(m) or m
  end
  local pos, negm = ma, mb -- the positive one's magnitude, the negative one's
  if na then
    pos, negm = mb, ma
  end
  if cmp(pos, negm) >= 0 then
    return sub(pos, negm)
  end
  return s_neg(sub(negm, pos))
end

local function s_sub(a, b)
  return s_add(a, s_isneg(b) and s_mag(b) or s_neg(b))
end

local function s_mul(a, m) -- a · m for an N m
  local p = mul(s_mag(a), m)
  return s_isneg(a) and s_neg(p) or p
end

local function s_min(a, b)
  return s_cmp(a, b) <= 0 and a or b
end

local function s_max(a, b)
  return s_cmp(a, b) >= 0 and a or b
end

local function s_floordiv(a, m) -- floor(a / m) for an N m > 0
  if s_isneg(a) then
    return s_neg(divceil(s_mag(a), m))
  end
  return div(a, m)
end

local U64_MAX = num("18446744073709551615")
local U128_MAX = num("340282366920938463463374607431768211455")

------------------------------------------------------------------------------
-- Arguments (core/src/args.rs, core/src/params.rs)
------------------------------------------------------------------------------

local function digits_only(s)
  return #s > 0 and not s:find("[^0-9]")
end

-- Redis's integer form: digits, no sign, no leading zero. Values below 10^16 only
-- (every bound checked here is below): nil for anything else.
local function plain_int(s)
  if not digits_only(s) or (#s > 1 and sbyte(s, 1) == 48) or #s > 16 then
    return nil
  end
  return tonumber(s)
end

local function count_arg(name, s)
  local v = plain_int(s)
  if not v or v < 1 or v > MAX_COUNT then
    fail(ERRORS.count(name))
  end
  return v
end

local function cost_arg(name, s)
  local v = plain_int(s)
  if not v or v > MAX_COUNT then
    fail(ERRORS.cost(name))
  end
  return v
end

local UNITS = { [""] = 1000, s = 1000, ms = 1, m = 60000, h = 3600000, d = 86400000 }

-- A duration's ms, at least `min` (1 for a window or period, 0 for a DELAY).
local function duration_ms(name, s, min)
  local number, unit = s:match("^([0-9]*)(.*)$")
  local per = #unit <= 2 and UNITS[unit:lower()]
  local v = per and #number <= 12 and plain_int(number)
  if not v or v * per < min or v * per > MAX_DURATION then
    fail(min == 0 and ERRORS.delay(name) or ERRORS.duration(name))
  end
  return v * per
end

local function duration_arg(name, s)
  return duration_ms(name, s, 1)
end

local function delay_arg(name, s)
  return duration_ms(name, s, 0)
end

-- An argument made safe to echo: Rust's escape_ascii of its first 32 bytes.
local ESCAPES = { [9] = "\\t", [10] = "\\n", [13] = "\\r", [34] = '\\"', [39] = "\\'", [92] = "\\\\" }

local function printable(s)
  local out = {}
  for i = 1, math.min(#s, 32) do
    local b = sbyte(s, i)
    if ESCAPES[b] then
      out[i] = ESCAPES[b]
    elseif b >= 32 and b < 127 then
      out[i] = schar(b)
    else
      out[i] = sfmt("\\x%02x", b)
    end
  end
  if #s > 32 then
    out[#out + 1] = "..."
  end
  return tconcat(out)
end

-- [COST n | REFUND n] (and DEBIT n, DELAY max, SHADOW when `takes` says so) from
-- args[i..]: {option, refund = bool, debit = bool, n = number}, delay (ms) when
-- given, and shadow = true when SHADOW was given (a flag: no value).
-- takes = {name = the command an error names, delay = bool, debit = bool}. in_all:
-- rl_all's options after its last policy, where a DELAY not taken is misplaced, not
-- unknown.
-- What a command takes (takes.refund false: no REFUND; takes.debit, takes.delay),
-- and how an error lists it: "COST n, REFUND n or DEBIT n, or DELAY max".
-- RL.QUOTA's calendar options: read with its unit (with_calendar), after the others.
local CALENDAR_WORDS = { EVERY = true, ON = true, AT = true, TZ = true }

local function takes_option(takes, word)
  if CALENDAR_WORDS[word] then
    return takes.calendar == true
  elseif word == "COST" then
    return true
  elseif word == "REFUND" then
    return takes.refund ~= false
  elseif word == "DEBIT" then
    return takes.debit == true
  elseif word == "SHADOW" then
    return takes.shadow == true
  end
  return word == "DELAY" and takes.delay == true
end

local function expected(takes)
  local words = {}
  for _, w in ipairs({ "COST", "REFUND", "DEBIT" }) do
    if takes_option(takes, w) then
      words[#words + 1] = w .. " n"
    end
  end
  local text = words[#words]
  if #words > 1 then
    text = table.concat(words, ", ", 1, #words - 1) .. " or " .. words[#words]
  end
  if takes.delay then
    text = text .. ", or DELAY max"
  end
  if takes.calendar then
    text = text .. ", and EVERY n, ON anchor, AT hh:mm or TZ zone"
  end
  return text
end

-- The options after a command's parameters: one parser for every command. An option
-- RL has that this command does not take is named as not applying to it.
local function options(args, i, takes, in_all)
  local amount, delay, shadow
  while i <= #args do
    local word = args[i]:upper()
    local option
    if not OPTION_WORDS[word] then
      fail("ERR syntax error: unknown option '" .. printable(args[i]) .. "', expected " .. expected(takes))
    elseif not takes_option(takes, word) then
      if in_all and word == "DELAY" then
        fail(ERRORS.delay_without_gcra)
      end
      fail("ERR syntax error: " .. word .. " does not apply to " .. takes.name .. ", which takes " .. expected(takes))
    end
    if word == "SHADOW" then
      if shadow then
        fail("ERR syntax error: SHADOW given more than once")
      end
      shadow = true
      i = i - 1 -- a flag: no value follows
    elseif CALENDAR_WORDS[word] then
      if args[i + 1] == nil then
        fail("ERR syntax error: " .. word .. " needs a value")
      end
    elseif word == "DELAY" then
      if args[i + 1] == nil then
        fail("ERR syntax error: DELAY needs a value")
      end
      if delay then
        fail("ERR syntax error: DELAY given more than once")
      end
      delay = delay_arg("DELAY", args[i + 1])
    else
      option = word
      local value = args[i + 1]
      if value == nil then
        fail("ERR syntax error: " .. option .. " needs a value")
      end
      if amount then
        if amount.option == option then
          fail("ERR syntax error: " .. option .. " given more than once")
        elseif amount.option == "DEBIT" then
          fail("ERR syntax error: " .. option .. " and DEBIT exclude each other")
        elseif option == "DEBIT" then
          fail("ERR syntax error: " .. amount.option .. " and DEBIT exclude each other")
        end
        fail("ERR syntax error: COST and REFUND exclude each other")
      end
      local n
      if option == "DEBIT" then
        n = count_arg(option, value)
      else
        n = cost_arg(option, value)
      end
      amount = { option = option, refund = option == "REFUND", debit = option == "DEBIT", n = n }
    end
    i = i + 2
  end
  amount = amount or { option = "COST", refund = false, debit = false, n = 1 }
  if delay and amount.refund then
    fail("ERR syntax error: DELAY and REFUND exclude each other")
  end
  if delay and amount.debit then
    fail("ERR syntax error: DELAY and DEBIT exclude each other")
  end
  amount.delay = delay
  amount.shadow = shadow == true
  return amount
end

------------------------------------------------------------------------------
-- Keys
------------------------------------------------------------------------------

local function key_type(key)
  return redis.call("TYPE", key).ok
end

-- parse_canonical: digits, no leading zero, at most u128.
local function canonical(s)
  if not digits_only(s) or #s > 39 or (#s > 1 and sbyte(s, 1) == 48) then
    return nil
  end
  local v = num(s)
  if cmp(v, U128_MAX) > 0 then
    return nil
  end
  return v
end

-- A string state: (value, expires_at) or nil for no key; expires_at is nil when
-- the key has no expiry; `not_held`: the error when the value is no state of
-- this limiter's (an ERRORS.not_* line). `need_expiry`: a value without one is not this limiter's
-- state (RL.FIXED: its expiry says which window it counts); GCRA and the sliding
-- counter read their value alone (docs/commands.md), the next write sets one.
local function load_record(key, not_held, parse, need_expiry)
  local t = key_type(key)
  if t == "none" then
    return nil
  elseif t ~= "string" then
    fail(ERRORS.wrong_type)
  end
  local value = parse(redis.call("GET", key))
  local at = redis.call("PEXPIRETIME", key)
  if value == nil or (need_expiry and at < 0) then
    fail(not_held)
  end
  if at < 0 then
    at = nil
  end
  return value, at
end

local function delete(key)
  redis.call("DEL", key)
end

local function set_pxat(key, value, at)
  redis.call("SET", key, value, "PXAT", str(at))
end

------------------------------------------------------------------------------
-- Decisions: {allowed = bool, limit, remaining, retry (0 now, -1 never, else ms),
-- reset}. Each limiter: params(args, i) -> params, next i; decide(key, params,
-- now, amount) -> decision, write (a function, or nil).
------------------------------------------------------------------------------

local function refunded(d)
  d.allowed = true
  d.retry = 0
  return d
end

-- RL.FIXED ------------------------------------------------------------------

local function quota_params(args, i)
  return { limit = count_arg("limit", args[i]), window = duration_arg("window", args[i + 1]) }, i + 2
end

-- A counter's state (RL.FIXED's, RL.QUOTA's): the units used, read by `load`
-- (`not_held` the error for a value that is not one).
local function counter_load(key, not_held)
  local used, at = load_record(key, not_held, function(s)
    local v = canonical(s)
    return v and cmp(v, U64_MAX) <= 0 and v or nil
  end, true)
  return used and { used = used, expires_at = at } or nil
end

local function fixed_take(stored, now, limit, window_end, n)
  local live = stored and stored.expires_at > now and stored or nil
  local used = live and live.used or 0
  local allowed = cmp(add(used, n), limit) <= 0
  local used_after = allowed and add(used, n) or used
  local store = allowed and n > 0 and { used = used_after, expires_at = window_end } or nil
  local resets_at = (store or live or { expires_at = window_end }).expires_at
  local retry = 0
  if not allowed then
    retry = n > limit and -1 or ms_until(resets_at, now)
  end
  return {
    allowed = allowed,
    limit = limit,
    remaining = satsub(limit, used_after),
    retry = retry,
    reset = used_after == 0 and 0 or ms_until(resets_at, now),
  },
    store
end

-- A limiter counting units per window: RL.FIXED's decision, state and writes
-- (`SET key n PXAT end`), the window holding now ending at ends(q, now) (q.limit
-- the limit); `not_held`: the error for a key holding something else.
local function counter(params, not_held, ends)
  return {
    params = params,
    decide = function(key, q, now, amount)
      local stored = counter_load(key, not_held)
      local window_end = ends(q, now)
      if amount.debit then
        -- used += n past the limit (stopping at 2^64 - 1), expiring at the window's end.
        local live = stored and stored.expires_at > now and stored or nil
        local used = nmin(add(live and live.used or 0, amount.n), U64_MAX)
        local after = { used = used, expires_at = window_end }
        return refunded((fixed_take(after, now, q.limit, window_end, 0))), function()
          set_pxat(key, str(used), window_end)
        end
      end
      if not amount.refund then
        local d, store = fixed_take(stored, now, q.limit, window_end, amount.n)
        return d, store and function()
          set_pxat(key, str(store.used), store.expires_at)
        end
      end
      local n = amount.n
      local after, write = stored, nil
      if stored and stored.expires_at > now and stored.used ~= 0 and n > 0 then
        local used = satsub(stored.used, n)
        if used == 0 then
          after = nil
          write = function()
            delete(key)
          end
        else
          after = { used = used, expires_at = stored.expires_at }
          write = function()
            set_pxat(key, str(used), stored.expires_at)
          end
        end
      end
      return refunded((fixed_take(after, now, q.limit, window_end, 0))), write
    end,
  }
end

-- Windows aligned to the epoch: window i covers [i·W, (i+1)·W).
local FIXED = counter(quota_params, ERRORS.not_fixed, function(q, now)
  return now - fmod(now, q.window) + q.window
end)

-- RL.QUOTA ------------------------------------------------------------------
-- RL.FIXED's counter with a calendar period as its window (calendar() above).

local the_calendar
local function cal()
  the_calendar = the_calendar or calendar()
  return the_calendar
end

-- `limit unit`, on the unit's default calendar until its options are read.
local function calendar_params(args, i)
  local limit = count_arg("limit", args[i])
  local unit = args[i + 1]
  return { limit = limit, unit = unit, calendar = (cal().parse(unit)) or fail(ERRORS.quota_unit) }, i + 2
end

-- The quota with its calendar options (EVERY n, ON anchor, AT hh:mm, TZ zone, each
-- at most once) among the name-value pairs from args[i] on: anywhere among the
-- command's options (among_others), or, for an RL.ALL policy, those right after
-- it. Returns the quota and the index after the options it took.
local function with_calendar(q, args, i, among_others)
  local values, j, last = {}, i, i
  while args[j] ~= nil do
    local word = args[j]:upper()
    if CALENDAR_WORDS[word] then
      if args[j + 1] == nil then
        fail("ERR syntax error: " .. word .. " needs a value")
      end
      if values[word] then
        fail("ERR syntax error: " .. word .. " given more than once")
      end
      values[word], last = args[j + 1], j + 2
    elseif not among_others then
      break
    elseif word == "SHADOW" then
      j = j - 1 -- another option: a flag stands alone, the rest take a value
    end
    j = j + 2
  end
  if last == i then
    return q, i
  end
  local c, why, unit = cal().parse(q.unit, values.EVERY, values.ON, values.AT, values.TZ)
  if not c then
    if why == "tz" then
      fail(ERRORS.quota_tz(printable(values.TZ)))
    end
    local e = ERRORS["quota_" .. why]
    fail(unit and e[unit] or e)
  end
  return { limit = q.limit, unit = q.unit, calendar = c }, last
end

local QUOTA = counter(calendar_params, ERRORS.not_quota, function(q, now)
  local _, stop = cal().period_of(q.calendar, now)
  return stop
end)
QUOTA.calendar = with_calendar

-- RL.SLIDING ----------------------------------------------------------------

local ZADD_CHUNK = 3000 -- members per ZADD call (Lua's C stack holds ~8000 values)

local function sliding_params(args, i)
  local q, j = quota_params(args, i)
  if q.limit > SLIDING_MAX then
    fail(ERRORS.sliding_limit)
  end
  return q, j
end

-- A score as a time RL writes: a whole number of ms in 0 ..= 2^53 - 1, else nil.
local function whole_ms(s)
  local v = s and tonumber(s)
  if v == nil or v ~= v or v < 0 or v > MAX_COUNT or v ~= floor(v) then
    return nil
  end
  return v
end

-- The one check every reader of a sorted set RL keeps makes (RL.SLIDING's log,
-- RL.ACQUIRE's leases, alone and in rl_all; the module's zset::check_times): its
-- lowest and highest scores are whole ms times, else `not_held` (an ERRORS.not_*
-- line).
-- The newest time; nil when the key is absent.
local function zset_times(key, not_held)
  local t = key_type(key)
  if t == "none" then
    return nil
  elseif t ~= "zset" then
    fail(ERRORS.wrong_type)
  end
  local oldest = redis.call("ZRANGE", key, 0, 0, "WITHSCORES")
  local newest = redis.call("ZRANGE", key, -1, -1, "WITHSCORES")
  local n = whole_ms(newest[2])
  if whole_ms(oldest[2]) == nil or n == nil then
    fail(not_held)
  end
  return n
end

-- The log's newest time, nil when the key is absent.
local function sliding_load(key)
  return zset_times(key, ERRORS.not_sliding)
end

local function count_after(key, newest, after)
  if newest == nil then
    return 0
  end
  return redis.call("ZCOUNT", key, "(" .. str(after), "+inf")
end

-- The k-th oldest unit after `after` (k >= 1), or nil.
local function nth_after(key, after, k)
  local r = redis.call("ZRANGEBYSCORE", key, "(" .. str(after), "+inf", "WITHSCORES", "LIMIT", k - 1, 1)
  return r[2] and ceil(tonumber(r[2])) or nil
end

-- Members are per-key sequence numbers: after the highest among the newest
-- time's members (leading zeros read, as the module does), skipping taken ones.
local function next_sequence(key, newest)
  if newest == nil then
    return 0
  end
  local next = 0
  for _, m in ipairs(redis.call("ZRANGEBYSCORE", key, str(newest), "+inf")) do
    if #m <= 15 and digits_only(m) then
      local seq = tonumber(m) -- exact below 10^15
      if cmp(seq, next) >= 0 then
        next = seq + 1
      end
    elseif #m <= 20 and digits_only(m) then
      local seq = num(m)
      if cmp(seq, U64_MAX) <= 0 then
        next = nmax(next, cmp(seq, U64_MAX) < 0 and add(seq, 1) or seq)
      end
    end
  end
  return next
end

local function sliding_append(key, newest, cutoff, at, units, expires_at)
  -- The members first, reading only: sequence numbers from next_sequence on,
  -- skipping members the set keeps after the trim (the module's ZADD NX), a chunk
  -- at a time. The last sequence number (2^64 - 1) can be given once: past it
  -- the call fails, after the trim and the units it could log (as the module).
  local seq = next_sequence(key, newest)
  local members, exhausted = {}, false
  while #members < units and not exhausted do
    local candidates = {}
    for i = 1, math.min(units - #members, ZADD_CHUNK) do
      candidates[i] = str(seq)
      if cmp(seq, U64_MAX) < 0 then
        seq = add(seq, 1)
      else
        exhausted = true
        break
      end
    end
    local scores = newest ~= nil and redis.call("ZMSCORE", key, unpack(candidates)) or {}
    for i, member in ipairs(candidates) do
      local score = scores[i] and tonumber(scores[i])
      if not score or score <= cutoff then
        members[#members + 1] = member
      end
    end
  end
  if newest ~= nil and redis.call("ZCOUNT", key, "-inf", str(cutoff)) > 0 then
    redis.call("ZREMRANGEBYSCORE", key, "-inf", str(cutoff))
  end
  local score = str(at)
  for first = 1, #members, ZADD_CHUNK do
    local batch = {}
    for i = first, math.min(first + ZADD_CHUNK - 1, #members) do
      batch[#batch + 1] = score
      batch[#batch + 1] = members[i]
    end
    redis.call("ZADD", key, unpack(batch))
  end
  if #members > 0 then
    redis.call("PEXPIREAT", key, str(expires_at))
  end
  if #members < units then
    -- As the module: what was written stays (and is replicated), the call fails.
    fail("ERR could not update the key (logging the new units)")
  end
end

local SLIDING = {
  params = sliding_params,
  decide = function(key, q, now, amount)
    local newest = sliding_load(key)
    local limit, w, n = q.limit, q.window, amount.n
    local at = newest and math.max(newest, now) or now
    local cutoff = at - w
    local counted = count_after(key, newest, cutoff)
    if amount.refund then
      local given = math.min(counted, n)
      local left = counted - given
      local newest_after = left > 0 and nth_after(key, cutoff, left) or nil
      local expires_at = newest_after and add(newest_after, w) or nil
      local d = refunded({
        limit = limit,
        remaining = satsub(limit, left),
        reset = expires_at and ms_until(expires_at, now) or 0,
      })
      if given == 0 then
        return d, nil
      end
      return d,
        function()
          if not expires_at then
            delete(key)
            return
          end
          local newest_members = redis.call("ZREVRANGE", key, 0, given - 1)
          if redis.call("ZCOUNT", key, "-inf", str(cutoff)) > 0 then
            redis.call("ZREMRANGEBYSCORE", key, "-inf", str(cutoff))
          end
          for first = 1, #newest_members, ZADD_CHUNK do
            redis.call("ZREM", key, unpack(newest_members, first, math.min(first + ZADD_CHUNK - 1, #newest_members)))
          end
          redis.call("PEXPIREAT", key, str(expires_at))
        end
    end
    local total = add(counted, n)
    local allowed = cmp(total, limit) <= 0
    local counted_after = allowed and total or counted
    local retry = 0
    if not allowed then
      if n > limit then
        retry = -1
      else
        local t_k = nth_after(key, cutoff, counted + n - limit) or at
        retry = ms_until(add(t_k, w), now)
      end
    end
    local wrote = allowed and n > 0
    local newest_after = wrote and at or newest
    local d = {
      allowed = allowed,
      limit = limit,
      remaining = satsub(limit, counted_after),
      retry = retry,
      reset = (newest_after and counted_after ~= 0) and ms_until(add(newest_after, w), now) or 0,
    }
    return d, wrote and function()
      sliding_append(key, newest, cutoff, at, n, add(at, w))
    end
  end,
}

-- RL.BUCKET -----------------------------------------------------------------

local MICROS = 1000000
-- The deepest debt a bucket holds, in millionths: -(2^53 - 1) tokens.
local DEEPEST_MICROS = mul(MAX_COUNT, MICROS)

local function rate_params(args, i)
  return {
    capacity = count_arg("capacity", args[i]),
    tokens = count_arg("tokens", args[i + 1]),
    period = duration_arg("period", args[i + 2]),
  },
    i + 3
end

-- "12", "2.5", "0.333333", "-3" (a debt): signed millionths of a token, extra
-- decimals cut off, rounding down (toward -inf); nil below the deepest debt.
local function parse_micros(s)
  local negative = sbyte(s, 1) == 45 -- "-"
  if negative then
    s = ssub(s, 2)
  end
  local int, frac = s:match("^([^.]*)%.(.*)$")
  if int == nil then
    int, frac = s, ""
  elseif frac == "" then
    return nil
  end
  if int == "" or #int > 30 or not digits_only(int) or (frac ~= "" and not digits_only(frac)) then
    return nil
  end
  local m = num(int .. ssub(frac .. "000000", 1, 6))
  if not negative then
    return m
  end
  if ssub(frac, 7):find("[1-9]") then
    m = add(m, 1)
  end
  if cmp(m, DEEPEST_MICROS) > 0 then
    return nil
  end
  return s_neg(m)
end

local function format_micros(m)
  local whole, frac = divmod(s_mag(m), MICROS)
  local sign = s_isneg(m) and "-" or ""
  if frac == 0 then
    return sign .. str(whole)
  end
  local f = sfmt("%06d", frac):gsub("0+$", "")
  return sign .. str(whole) .. "." .. f
end

local function bucket_load(key)
  local t = key_type(key)
  if t == "none" then
    return nil
  elseif t ~= "hash" then
    fail(ERRORS.wrong_type)
  end
  local f = redis.call("HMGET", key, "tokens", "ts")
  local level = f[1] and parse_micros(f[1])
  local ts = f[2] and digits_only(f[2]) and #f[2] <= 20 and num(f[2])
  if not level or not ts or cmp(ts, MAX_COUNT) > 0 then
    fail(ERRORS.not_bucket)
  end
  return { level = level, ts = ts }
end

-- Levels below are signed exact integers in 1 / (10^6 · period) token.
local function bucket_rate(r)
  local token = mul(MICROS, r.period) -- one token in the exact unit
  return {
    capacity = r.capacity,
    period = r.period,
    token = token,
    per_ms = mul(r.tokens, MICROS),
    full = mul(r.capacity, token),
    deepest = s_neg(mul(MAX_COUNT, token)),
  }
end

local function level_at(stored, now, r)
  if not stored then
    return now, r.full
  end
  local at = math.max(now, stored.ts)
  local micros = s_max(s_min(stored.level, div(r.full, r.period)), s_neg(DEEPEST_MICROS))
  local base = s_mul(micros, r.period)
  local elapsed = math.max(at - stored.ts, 0)
  if cmp(elapsed, divceil(s_sub(r.full, base), r.per_ms)) >= 0 then
    return at, r.full
  end
  return at, s_add(base, mul(elapsed, r.per_ms))
end

local function settle(at, level, now, r)
  local resets_at = add(at, cap(divceil(s_sub(r.full, level), r.per_ms)))
  return { level = s_floordiv(level, r.period), ts = at, expires_at = resets_at },
    {
      allowed = true,
      limit = r.capacity,
      remaining = s_isneg(level) and 0 or div(level, r.token),
      retry = 0,
      reset = s_cmp(level, r.full) >= 0 and 0 or ms_until(resets_at, now),
    }
end

local BUCKET = {
  params = rate_params,
  decide = function(key, params, now, amount)
    local r = bucket_rate(params)
    local stored = bucket_load(key)
    local at, level = level_at(stored, now, r)
    local n = amount.n
    local write_store = function(s)
      return function()
        redis.call("HSET", key, "tokens", format_micros(s.level), "ts", str(s.ts))
        redis.call("PEXPIREAT", key, str(s.expires_at))
      end
    end
    if amount.debit then
      -- level -= n, below zero if need be, down to the deepest debt.
      local s, d = settle(at, s_max(s_sub(level, mul(n, r.token)), r.deepest), now, r)
      return d, write_store(s)
    end
    if amount.refund then
      local level_after = s_min(s_add(level, mul(n, r.token)), r.full)
      local s, d = settle(at, level_after, now, r)
      if not stored or s_cmp(level_after, level) == 0 then
        return d, nil
      elseif s_cmp(level_after, r.full) == 0 then
        return d, function()
          delete(key)
        end
      end
      return d, write_store(s)
    end
    local wanted = mul(n, r.token)
    local allowed = s_cmp(wanted, level) <= 0
    local s, d = settle(at, allowed and s_sub(level, wanted) or level, now, r)
    d.allowed = allowed
    if not allowed then
      if n > r.capacity then
        d.retry = -1
      else
        d.retry = ms_until(add(at, cap(divceil(s_sub(wanted, level), r.per_ms))), now)
      end
    end
    return d, (allowed and n > 0) and write_store(s) or nil
  end,
}

-- RL.GCRA -------------------------------------------------------------------

local NS_PER_MS = 1000000

local function gcra_params(args, i)
  local r, j = rate_params(args, i)
  local interval = div(mul(r.period, NS_PER_MS), r.tokens)
  if interval == 0 then
    fail(ERRORS.rate_too_high)
  end
  return { capacity = r.capacity, interval = interval, tolerance = mul(r.capacity, interval), max_wait = 0 }, j
end

-- The same rate with DELAY max (ms): a call may wait up to max_wait ns for its turn.
local function gcra_delayed(e, max_ms)
  return { capacity = e.capacity, interval = e.interval, tolerance = e.tolerance, max_wait = mul(max_ms, NS_PER_MS) }
end

local function gcra_expiry(now, debt)
  return add(now, cap(divceil(debt, NS_PER_MS)))
end

local function gcra_take(tat, now, e, n)
  local now_ns = mul(math.max(now, 0), NS_PER_MS)
  local base = tat and nmax(tat, now_ns) or now_ns
  local debt = sub(base, now_ns)
  local t, d = e.interval, e.tolerance
  local increment = mul(n, t)
  local wanted = add(debt, increment)
  local allowed = n <= e.capacity and cmp(wanted, add(d, e.max_wait)) <= 0
  local debt_after = allowed and wanted or debt
  local store = (allowed and n > 0) and { tat = add(base, increment), expires_at = gcra_expiry(now, debt_after) }
    or nil
  local retry
  if allowed then
    -- The debt beyond D is the wait before acting (none without DELAY).
    retry = cap(divceil(satsub(wanted, d), NS_PER_MS))
  else
    retry = n > e.capacity and -1 or cap(divceil(sub(sub(wanted, d), e.max_wait), NS_PER_MS))
  end
  return {
    allowed = allowed,
    limit = e.capacity,
    remaining = nmin(div(satsub(d, debt_after), t), e.capacity),
    retry = retry,
    reset = cap(divceil(debt_after, NS_PER_MS)),
  },
    store
end

local GCRA = {
  params = gcra_params,
  delayed = gcra_delayed,
  decide = function(key, e, now, amount)
    local tat = load_record(key, ERRORS.not_gcra, canonical)
    local n = amount.n
    if amount.debit then
      -- TAT = max(TAT, now) + n·T, no cap at D (stopping at 2^128 - 1).
      local now_ns = mul(math.max(now, 0), NS_PER_MS)
      local left = nmin(add(tat and nmax(tat, now_ns) or now_ns, mul(n, e.interval)), U128_MAX)
      local at = gcra_expiry(now, sub(left, now_ns))
      return refunded((gcra_take(left, now, e, 0))), function()
        set_pxat(key, str(left), at)
      end
    end
    if not amount.refund then
      local d, store = gcra_take(tat, now, e, n)
      return d, store and function()
        set_pxat(key, str(store.tat), store.expires_at)
      end
    end
    local now_ns = mul(math.max(now, 0), NS_PER_MS)
    local after, write = tat, nil
    if tat and cmp(tat, now_ns) > 0 and n > 0 then
      local left = satsub(tat, mul(n, e.interval))
      if cmp(left, now_ns) <= 0 then
        after = nil
        write = function()
          delete(key)
        end
      else
        after = left
        local at = gcra_expiry(now, sub(left, now_ns))
        write = function()
          set_pxat(key, str(left), at)
        end
      end
    end
    return refunded((gcra_take(after, now, e, 0))), write
  end,
}

-- RL.SLIDINGCOUNTER ---------------------------------------------------------

local function sc_parse(s)
  local a, b, c = s:match("^([^ ]*) ([^ ]*) ([^ ]*)$")
  if a == nil then
    return nil
  end
  local start, current, previous = canonical(a), canonical(b), canonical(c)
  if
    not start
    or not current
    or not previous
    or cmp(start, MAX_COUNT) > 0
    or cmp(current, U64_MAX) > 0
    or cmp(previous, U64_MAX) > 0
  then
    return nil
  end
  return { start = start, current = current, previous = previous }
end

local function sc_view(stored, now, w)
  stored = stored or { start = now, current = 0, previous = 0 }
  local at = math.max(now, stored.start)
  local i = floor(at / w)
  if i * w > at then
    i = i - 1
  elseif (i + 1) * w <= at then
    i = i + 1
  end
  local j = floor(stored.start / w)
  if j * w > stored.start then
    j = j - 1
  elseif (j + 1) * w <= stored.start then
    j = j + 1
  end
  local cur, prev = 0, 0
  if j == i then
    cur, prev = stored.current, stored.previous
  elseif i - j == 1 then
    prev = stored.current
  end
  return at, i * w, cur, prev
end

local function sc_wait(cur, prev, limit, n, w, e)
  local left = w - e
  local weight_ok
  if cmp(add(cur, n), limit) <= 0 and prev ~= 0 then
    weight_ok = div(mul(sub(limit, add(cur, n)), w), prev)
  end
  if weight_ok and weight_ok ~= 0 then
    return left - nmin(weight_ok, left - 1)
  end
  local e2 = 0
  if cmp(add(cur, n), limit) > 0 then
    e2 = w - nmin(div(mul(limit - n, w), cur), w)
  end
  return left + e2
end

local function sc_take(stored, now, q, n)
  local w, limit = q.window, q.limit
  local at, window_start, cur, prev = sc_view(stored, now, w)
  local lag = math.max(at - now, 0)
  local e = at - window_start
  local weighted_prev = mul(prev, w - e)
  local allowed = n <= limit and cmp(add(mul(add(cur, n), w), weighted_prev), mul(limit, w)) <= 0
  local cur_after = allowed and add(cur, n) or cur
  local store = (allowed and n > 0)
      and { start = window_start, current = cur_after, previous = prev, expires_at = add(window_start, 2 * w) }
    or nil
  local retry = 0
  if not allowed then
    retry = n > limit and -1 or cap(add(lag, sc_wait(cur, prev, limit, n, w, e)))
  end
  local till = 0
  if cur_after ~= 0 then
    till = 2 * w - e
  elseif prev ~= 0 then
    till = w - e
  end
  return {
    allowed = allowed,
    limit = limit,
    remaining = nmin(satsub(satsub(limit, cur_after), divceil(weighted_prev, w)), limit),
    retry = retry,
    reset = till == 0 and 0 or cap(add(lag, till)),
  },
    store
end

local function sc_write(key, s)
  return function()
    set_pxat(key, str(s.start) .. " " .. str(s.current) .. " " .. str(s.previous), s.expires_at)
  end
end

local SLIDINGCOUNTER = {
  params = quota_params,
  decide = function(key, q, now, amount)
    local stored = load_record(key, ERRORS.not_slidingcounter, sc_parse)
    local n = amount.n
    if amount.debit then
      -- current += n past the limit (stopping at 2^64 - 1).
      local _, window_start, cur, prev = sc_view(stored, now, q.window)
      local s = {
        start = window_start,
        current = nmin(add(cur, n), U64_MAX),
        previous = prev,
        expires_at = add(window_start, 2 * q.window),
      }
      return refunded((sc_take(s, now, q, 0))), sc_write(key, s)
    end
    if not amount.refund then
      local d, store = sc_take(stored, now, q, n)
      return d, store and sc_write(key, store)
    end
    local _, window_start, cur, prev = sc_view(stored, now, q.window)
    local from_current = nmin(cur, n)
    local from_previous = nmin(prev, n - from_current)
    local cur_after, prev_after = sub(cur, from_current), sub(prev, from_previous)
    local after, write = stored, nil
    if stored and add(from_current, from_previous) ~= 0 then
      if cur_after == 0 and prev_after == 0 then
        after = nil
        write = function()
          delete(key)
        end
      else
        after = { start = window_start, current = cur_after, previous = prev_after }
        write = sc_write(key, {
          start = window_start,
          current = cur_after,
          previous = prev_after,
          expires_at = add(window_start, 2 * q.window),
        })
      end
    end
    return refunded((sc_take(after, now, q, 0))), write
  end,
}

-- RL.ACQUIRE / RL.RELEASE ---------------------------------------------------

local function lease_id(s)
  if s == nil or #s < 1 or #s > MAX_ID then
    fail(ERRORS.lease_id)
  end
  return s
end

local function lease_params(args, i)
  local limit = plain_int(args[i])
  if not limit or limit < 1 or limit > SLIDING_MAX then
    fail(ERRORS.lease_limit)
  end
  return { limit = limit, ttl = duration_arg("ttl", args[i + 1]), id = lease_id(args[i + 2]) }, i + 3
end

-- Whether the key holds leases (false when absent): zset_times, as for a log.
local function lease_load(key)
  return zset_times(key, ERRORS.not_leases) ~= nil
end

-- The latest lease end after now among the leases not named `except`, or nil.
local function latest_live(key, now, except)
  local top = redis.call("ZRANGE", key, -2, -1, "WITHSCORES")
  for j = #top - 1, 1, -2 do
    if top[j] ~= except then
      local e = ceil(tonumber(top[j + 1]))
      return e > now and e or nil
    end
  end
  return nil
end

-- The end of lease `id` if it is live, else nil.
local function live_end(key, now, id)
  local s = redis.call("ZSCORE", key, id)
  local e = s and ceil(tonumber(s))
  return (e and e > now) and e or nil
end

local ACQUIRE = {
  params = lease_params,
  decide = function(key, p, now, amount)
    if amount.refund then
      fail(ERRORS.lease_refund)
    end
    local present = lease_load(key)
    local limit = p.limit
    local ended = present and redis.call("ZCOUNT", key, "-inf", str(now)) or 0
    local live = present and redis.call("ZCARD", key) - ended or 0
    local function reset_now()
      local l = present and latest_live(key, now, nil)
      return l and ms_until(l, now) or 0
    end
    if amount.n == 0 then
      return { allowed = true, limit = limit, remaining = satsub(limit, live), retry = 0, reset = reset_now() }, nil
    end
    local held = present and live_end(key, now, p.id)
    if not held and live >= limit then
      local first = redis.call("ZRANGEBYSCORE", key, "(" .. str(now), "+inf", "WITHSCORES", "LIMIT", 0, 1)
      local retry = math.max(ms_until(ceil(tonumber(first[2])), now), 1)
      return { allowed = false, limit = limit, remaining = 0, retry = retry, reset = reset_now() }, nil
    end
    local e = now + p.ttl
    local other = present and latest_live(key, now, p.id)
    local latest = other and math.max(other, e) or e
    local trim, renew = ended > 0, held ~= e
    local d = {
      allowed = true,
      limit = limit,
      remaining = satsub(limit, held and live or live + 1),
      retry = 0,
      reset = ms_until(latest, now),
    }
    if not trim and not renew then
      return d, nil
    end
    return d,
      function()
        if trim then
          redis.call("ZREMRANGEBYSCORE", key, "-inf", str(now))
        end
        if renew then
          redis.call("ZADD", key, str(e), p.id)
          redis.call("PEXPIREAT", key, str(latest))
        end
      end
  end,
}

-- RL.PENALTY ----------------------------------------------------------------

local function penalty_params(args, i)
  local p = {
    strikes = count_arg("strikes", args[i]),
    window = duration_arg("window", args[i + 1]),
    block = duration_arg("block", args[i + 2]),
    max = duration_arg("max", args[i + 3]),
  }
  if p.block > p.max then
    fail(ERRORS.block_above_max)
  end
  return p, i + 4
end


-- Four canonical decimals, one space apart, each at most 2^53 - 1.
local function penalty_parse(s)
  local f = { s:match("^([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*)$") }
  if #f ~= 4 then
    return nil
  end
  for k = 1, 4 do
    f[k] = canonical(f[k])
    if not f[k] or cmp(f[k], MAX_COUNT) > 0 then
      return nil
    end
  end
  return { count = f[1], window_end = f[2], level = f[3], blocked_until = f[4] }
end

-- block * 2^level, at most max (the loop stops there, whatever the level).
local function penalty_block(p, level)
  local length, doubled = p.block, 0
  while doubled < level and length < p.max do
    length, doubled = length * 2, doubled + 1
  end
  return math.min(length, p.max)
end

-- The state as a call at now sees it: an ended window holds no strikes; an
-- offender quiet for max after the last block is forgiven (never while blocked).
local function penalty_at(s, now, p)
  local v = { count = s.count, window_end = s.window_end, level = s.level, blocked_until = s.blocked_until }
  if now >= v.window_end then
    v.count, v.window_end = 0, 0
  end
  if v.level > 0 and cmp(now, add(v.blocked_until, p.max)) >= 0 then
    v.level = 0
  end
  return v
end

-- When the key is back to its initial state: also its expiry.
local function penalty_resets_at(s, p)
  local at = nmax(s.window_end, s.blocked_until)
  if s.level > 0 then
    at = nmax(at, add(s.blocked_until, p.max))
  end
  return at
end

local function penalty_report(s, now, p)
  local blocked = now < s.blocked_until
  return {
    allowed = not blocked,
    limit = p.strikes,
    remaining = blocked and 0 or satsub(p.strikes, s.count),
    retry = blocked and ms_until(s.blocked_until, now) or 0,
    reset = ms_until(penalty_resets_at(s, p), now),
  }
end

local PENALTY = {
  params = penalty_params,
  decide = function(key, p, now, amount)
    local stored = load_record(key, ERRORS.not_penalty, penalty_parse)
    local seen = penalty_at(stored or { count = 0, window_end = 0, level = 0, blocked_until = 0 }, now, p)
    local n = amount.n
    if now < seen.blocked_until or n == 0 then
      return penalty_report(seen, now, p), nil
    end
    local after
    -- count + n >= strikes, without adding two values that may be near 2^53.
    if n >= satsub(p.strikes, seen.count) then
      after = {
        count = 0,
        window_end = 0,
        level = math.min(seen.level + 1, MAX_COUNT),
        blocked_until = now + penalty_block(p, seen.level),
      }
    else
      after = {
        count = seen.count + n,
        window_end = seen.count == 0 and now + p.window or seen.window_end,
        level = seen.level,
        blocked_until = seen.blocked_until,
      }
    end
    return penalty_report(after, now, p),
      function()
        local fields = { str(after.count), str(after.window_end), str(after.level), str(after.blocked_until) }
        set_pxat(key, tconcat(fields, " "), penalty_resets_at(after, p))
      end
  end,
}

-- RL.SHARE ------------------------------------------------------------------

-- One budget shared by weight across tenants (docs/commands.md#rlshare): the
-- budget's GCRA, each remembered tenant's own GCRA at its weighted share
-- (T_i = T·W/w), the surplus lent; tenants remembered in time slots until a
-- period after their last write; a bounded sweep of forgotten tenants' fields.
-- TATs, D, T_i and the products are exact integers (N); the counts and times in
-- the records are plain numbers below 2^53 as read, and N when a sum passes it.
local SHARE
do
  local SLOTS = 8 -- time slots per period, and closed slots kept at most
  local SWEEP_STEPS = 2 -- index entries a write examines at most
  local NS = 1000000 -- ns per ms
  local NO, OWN, SURPLUS = 0, 1, 2 -- how a call passes

  local function corrupt()
    fail(ERRORS.not_share)
  end

  local function params(args, i)
    local tenant = args[i]
    if #tenant < 1 or #tenant > MAX_TENANT then
      fail(ERRORS.tenant)
    end
    local weight = plain_int(args[i + 1])
    if not weight or weight < 1 or weight > MAX_WEIGHT then
      fail(ERRORS.weight)
    end
    local r = rate_params(args, i + 2)
    local interval = div(mul(r.period, NS), r.tokens)
    if interval == 0 then
      fail(ERRORS.share_rate_too_high)
    end
    return {
      tenant = tenant,
      weight = weight,
      capacity = r.capacity,
      interval = interval,
      tolerance = mul(r.capacity, interval),
      period = r.period,
      slot = math.max(ceil(r.period / SLOTS), 1),
      max_tenants = SHARE_MAX_TENANTS,
    },
      i + 5
  end

  -- Exactly `count` canonical decimals (each at most 2^128 - 1) one space apart,
  -- or nil; `small`: from the `small`-th on, each at most 2^53 - 1.
  local function numbers(s, count, small)
    local out, pos = {}, 1
    for k = 1, count do
      local sp = s:find(" ", pos, true)
      local part
      if k < count then
        if not sp then
          return nil
        end
        part, pos = ssub(s, pos, sp - 1), sp + 1
      elseif sp then
        return nil
      else
        part = ssub(s, pos)
      end
      local v = canonical(part)
      if not v or (k >= small and cmp(v, MAX_COUNT) > 0) then
        return nil
      end
      out[k] = v
    end
    return out
  end

  local G_NAMES = {
    "tat",
    "debt_end",
    "weight",
    "tenants",
    "len",
    "cursor",
    "seq",
    "end_",
    "slot_weight",
    "slot_tenants",
    "closed",
    "oldest_end",
  }

  local function global_parse(s)
    local f = numbers(s, 12, 3)
    if not f then
      corrupt()
    end
    local g = {}
    for k, name in ipairs(G_NAMES) do
      g[name] = f[k]
    end
    return g
  end

  local function global_new()
    local g = {}
    for _, name in ipairs(G_NAMES) do
      g[name] = 0
    end
    return g
  end

  -- A count or time as stored: at most 2^53 - 1.
  local function small(v)
    return str(nmin(v, MAX_COUNT))
  end

  local function global_format(g)
    local out = { str(g.tat), str(g.debt_end) }
    for k = 3, 12 do
      out[k] = small(g[G_NAMES[k]])
    end
    return tconcat(out, " ")
  end

  -- Whether a tenant last written in slot `seq` is remembered.
  local function remembers(g, seq)
    return cmp(seq, g.seq) == 0 or (cmp(seq, g.seq) < 0 and cmp(sub(g.seq, seq), g.closed) <= 0)
  end

  local function member_format(m)
    return str(m.tat) .. " " .. small(m.weight) .. " " .. small(m.seq) .. " " .. small(m.index)
  end

  local function slot_format(s)
    return small(s.end_) .. " " .. small(s.weight) .. " " .. small(s.tenants)
  end

  local function slot_field(seq)
    return "s:" .. str(fmod(seq, SLOTS))
  end

  local function index_field(position)
    return "i:" .. str(position)
  end

  -- The fields a call reads (HGET, one at a time) and the changes it makes on top
  -- of them: every field written, in the order first written (false: deleted).
  local function txn(key)
    local t = key_type(key)
    if t ~= "none" and t ~= "hash" then
      fail(ERRORS.wrong_type)
    end
    local present = t == "hash"
    local x = { key = key, names = {}, values = {}, at = {} }
    function x.get(name)
      local k = x.at[name]
      if k then
        return x.values[k] or nil
      end
      local v = present and redis.call("HGET", key, name)
      return v or nil
    end
    function x.put(name, value)
      local k = x.at[name]
      if not k then
        k = #x.names + 1
        x.names[k], x.at[name] = name, k
      end
      x.values[k] = value
    end
    function x.member(tenant)
      local v = x.get("t:" .. tenant)
      if v == nil then
        return nil
      end
      local f = numbers(v, 4, 2)
      if not f then
        corrupt()
      end
      return { tat = f[1], weight = f[2], seq = f[3], index = f[4] }
    end
    function x.slot(seq)
      local v = x.get(slot_field(seq))
      local f = v and numbers(v, 3, 1)
      if not f then
        corrupt()
      end
      return { end_ = f[1], weight = f[2], tenants = f[3] }
    end
    -- HSET of the fields set, HDEL of those deleted (if any), PEXPIREAT when the
    -- expiry changes.
    function x.write(expires_at)
      return function()
        local set, del = {}, {}
        for k, name in ipairs(x.names) do
          local v = x.values[k]
          if v then
            set[#set + 1] = name
            set[#set + 1] = v
          else
            del[#del + 1] = name
          end
        end
        redis.call("HSET", key, unpack(set))
        if #del > 0 then
          redis.call("HDEL", key, unpack(del))
        end
        -- PEXPIRETIME is exact below 2^53 ms, where every real expiry is.
        if type(expires_at) ~= "number" or redis.call("PEXPIRETIME", key) ~= expires_at then
          redis.call("PEXPIREAT", key, str(expires_at))
        end
      end
    end
    return x
  end

  -- When the key expires: at the end of the slot in which the budget is back at
  -- its initial state. Rounded up to a slot, the expiry stays the same for the
  -- calls of a slot, which then set no new one.
  local function key_expiry(p, now, reset)
    return mul(divceil(add(now, reset), p.slot), p.slot)
  end

  -- Forgets the slots that ended at least a period ago (closed ones oldest first,
  -- then the current one), deleting their fields.
  local function forget(x, g, period, now)
    while cmp(g.closed, 0) > 0 and cmp(add(g.oldest_end, period), now) <= 0 do
      if cmp(g.seq, g.closed) < 0 then
        corrupt()
      end
      local seq = sub(g.seq, g.closed)
      local slot = x.slot(seq)
      g.weight = satsub(g.weight, slot.weight)
      g.tenants = satsub(g.tenants, slot.tenants)
      x.put(slot_field(seq), false)
      g.closed = sub(g.closed, 1)
      g.oldest_end = cmp(g.closed, 0) > 0 and x.slot(add(seq, 1)).end_ or 0
    end
    if cmp(g.slot_tenants, 0) > 0 and cmp(add(g.end_, period), now) <= 0 then
      g.weight = satsub(g.weight, g.slot_weight)
      g.tenants = satsub(g.tenants, g.slot_tenants)
      g.slot_weight, g.slot_tenants = 0, 0
      g.seq = nmin(add(g.seq, 1), MAX_COUNT)
    end
  end

  -- A tenant's standing: the budget's debt g, its own d, W with it at this
  -- call's weight, and T_i = max(floor(T·W/w), 1).
  local function standing(g, d, total, p)
    return { g = g, d = d, total = total, own = nmax(div(mul(p.interval, nmax(total, 1)), p.weight), 1) }
  end

  local function admits(s, p, n)
    local t, dd = p.interval, p.tolerance
    local nt = mul(n, t)
    -- Within the budget: g + n·T <= D (and n <= capacity).
    if n > p.capacity or cmp(add(s.g, nt), dd) > 0 then
      return NO
    end
    -- Within the share: no debt, or d + n·T_i <= D.
    if s.d == 0 or cmp(add(s.d, mul(n, s.own)), dd) <= 0 then
      return OWN
    end
    -- From the surplus: W·g <= w·(D - n·T).
    if cmp(nt, dd) <= 0 and cmp(mul(s.total, s.g), mul(p.weight, sub(dd, nt))) <= 0 then
      return SURPLUS
    end
    return NO
  end

  local function remaining(s, p)
    local t, dd, c, w = p.interval, p.tolerance, p.capacity, p.weight
    local budget = div(satsub(dd, s.g), t)
    local own = c
    if s.d ~= 0 then
      own = div(satsub(dd, s.d), s.own)
    end
    local wd, used = mul(w, dd), mul(s.total, s.g)
    local surplus = 0
    if cmp(used, wd) <= 0 then
      surplus = div(sub(wd, used), mul(w, t))
    end
    return nmin(nmin(budget, nmax(own, surplus)), c)
  end

  -- The wait in ns until a call of n (<= capacity) passes if nothing else happens.
  local function wait(s, p, n)
    local dd = p.tolerance
    local nt = mul(n, p.interval)
    local budget = satsub(nmin(add(s.g, nt), U128_MAX), dd)
    local share = nmin(s.d, satsub(nmin(add(s.d, mul(n, s.own)), U128_MAX), dd))
    local room = div(mul(p.weight, satsub(dd, nt)), s.total)
    return nmax(budget, nmin(share, satsub(s.g, room)))
  end

  local function reset_after(debt, g, p, now, now_ns)
    local budget = cap(divceil(debt, NS))
    local owed = cap(divceil(satsub(g.debt_end, now_ns), NS))
    local tenants = 0
    if cmp(g.tenants, 0) > 0 then
      tenants = satsub(add(g.end_, p.period), now)
    end
    return nmin(nmax(nmax(budget, owed), tenants), MAX_COUNT)
  end

  local function report(s, p, g, now, now_ns, n)
    local allowed = admits(s, p, n) ~= NO
    local retry = 0
    if not allowed then
      retry = n > p.capacity and -1 or math.max(cap(divceil(wait(s, p, n), NS)), 1)
    end
    return {
      allowed = allowed,
      limit = p.capacity,
      remaining = remaining(s, p),
      retry = retry,
      reset = reset_after(s.g, g, p, now, now_ns),
    }
  end

  -- Removes forgotten tenants' fields: up to SWEEP_STEPS index entries from the
  -- cursor while the index holds more entries than tenants remembered.
  local function sweep(x, g, now_ns, max_tenants)
    for _ = 1, SWEEP_STEPS do
      if cmp(g.len, g.tenants) <= 0 then
        break
      end
      if cmp(g.cursor, g.len) >= 0 then
        g.cursor = 0
      end
      local at = g.cursor
      local name = x.get(index_field(at))
      local record = name and x.member(name)
      if not record then
        corrupt()
      end
      local crowded = cmp(g.len, max_tenants * 2) > 0
      if remembers(g, record.seq) or (cmp(record.tat, now_ns) > 0 and not crowded) then
        g.cursor = add(at, 1)
      else
        x.put("t:" .. name, false)
        local last = sub(g.len, 1)
        if cmp(at, last) ~= 0 then
          local moved = x.get(index_field(last))
          local m = moved and x.member(moved)
          if not m then
            corrupt()
          end
          m.index = at
          x.put("t:" .. moved, member_format(m))
          x.put(index_field(at), moved)
        end
        x.put(index_field(last), false)
        g.len = last
      end
    end
    if cmp(g.cursor, g.len) >= 0 then
      g.cursor = 0
    end
  end

  -- Registers the call's tenant: a new slot if the current one has ended, its
  -- weight moved into the current slot (or added), its record with own TAT
  -- `own_tat`, the sweep, the global record.
  local function join(x, g, member, live, p, now, now_ns, own_tat)
    if cmp(now, g.end_) >= 0 then
      local s = p.slot
      local ends = nmin(add(now - fmod(now, s), s), MAX_COUNT)
      if cmp(g.slot_tenants, 0) > 0 and cmp(g.closed, SLOTS) < 0 then
        x.put(slot_field(g.seq), slot_format({ end_ = g.end_, weight = g.slot_weight, tenants = g.slot_tenants }))
        if cmp(g.closed, 0) == 0 then
          g.oldest_end = g.end_
        end
        g.closed = add(g.closed, 1)
        g.seq = nmin(add(g.seq, 1), MAX_COUNT)
        g.slot_weight, g.slot_tenants = 0, 0
      end
      g.end_ = ends
    end
    local tenant, w = p.tenant, p.weight
    local index
    if member and live then
      if cmp(member.seq, g.seq) == 0 then
        g.slot_weight = satsub(g.slot_weight, member.weight)
      else
        local slot = x.slot(member.seq)
        slot.weight = satsub(slot.weight, member.weight)
        slot.tenants = satsub(slot.tenants, 1)
        x.put(slot_field(member.seq), slot_format(slot))
        g.slot_tenants = add(g.slot_tenants, 1)
      end
      g.weight = satsub(g.weight, member.weight)
      index = member.index
    elseif member then
      -- A forgotten tenant keeps its place in the index.
      if cmp(member.index, g.len) >= 0 or x.get(index_field(member.index)) ~= tenant then
        corrupt()
      end
      g.tenants = add(g.tenants, 1)
      g.slot_tenants = add(g.slot_tenants, 1)
      index = member.index
    else
      index = g.len
      x.put(index_field(index), tenant)
      g.len = add(g.len, 1)
      g.tenants = add(g.tenants, 1)
      g.slot_tenants = add(g.slot_tenants, 1)
    end
    g.weight = add(g.weight, w)
    g.slot_weight = add(g.slot_weight, w)
    g.debt_end = nmax(g.debt_end, own_tat)
    x.put("t:" .. tenant, member_format({ tat = own_tat, weight = w, seq = g.seq, index = index }))
    sweep(x, g, now_ns, p.max_tenants)
    x.put("g", global_format(g))
  end

  SHARE = {
    name = "SHARE",
    debit = true,
    params = params,
    decide = function(key, p, now, amount)
      now = math.min(math.max(now, 0), MAX_COUNT)
      local now_ns = mul(now, NS)
      local x = txn(key)
      local stored = x.get("g")
      local g = stored and global_parse(stored) or global_new()
      forget(x, g, p.period, now)
      local member = x.member(p.tenant)
      local live = member ~= nil and remembers(g, member.seq)
      local w = p.weight
      local total = add(satsub(g.weight, live and member.weight or 0), w)
      local function debt(tat)
        return satsub(tat, now_ns)
      end
      -- A forgotten tenant's share no longer counts, but what it owes it still owes.
      local st = standing(debt(g.tat), member and debt(member.tat) or 0, total, p)
      local n = amount.n
      local joins = amount.debit or (not amount.refund and n > 0)
      if joins and not live and cmp(g.tenants, p.max_tenants) >= 0 then
        fail(ERRORS.share_tenants(p.max_tenants))
      end
      if amount.debit then
        g.tat = nmin(add(nmax(g.tat, now_ns), mul(n, p.interval)), U128_MAX)
        local own_tat = nmin(add(add(now_ns, st.d), mul(n, st.own)), U128_MAX)
        join(x, g, member, live, p, now, now_ns, own_tat)
        local d = refunded(report(standing(debt(g.tat), debt(own_tat), total, p), p, g, now, now_ns, 0))
        return d, x.write(key_expiry(p, now, d.reset))
      end
      if amount.refund then
        local budget_tat = g.tat
        if cmp(g.tat, now_ns) > 0 then
          budget_tat = nmax(satsub(g.tat, mul(n, p.interval)), now_ns)
        end
        local own_tat = member and member.tat
        if member and cmp(member.tat, now_ns) > 0 then
          own_tat = nmax(satsub(member.tat, mul(n, st.own)), now_ns)
        end
        local own_changed = member ~= nil and cmp(own_tat, member.tat) ~= 0
        local changed = cmp(budget_tat, g.tat) ~= 0 or own_changed
        g.tat = budget_tat
        local d = refunded(report(standing(debt(budget_tat), own_tat and debt(own_tat) or 0, total, p), p, g, now, now_ns, 0))
        if not changed then
          return d, nil
        end
        if cmp(g.tenants, 0) == 0 and cmp(g.tat, now_ns) <= 0 and cmp(g.debt_end, now_ns) <= 0 then
          return d, function()
            delete(key)
          end
        end
        if own_changed then
          x.put(
            "t:" .. p.tenant,
            member_format({ tat = own_tat, weight = member.weight, seq = member.seq, index = member.index })
          )
        end
        x.put("g", global_format(g))
        return d, x.write(key_expiry(p, now, d.reset))
      end
      local admission = admits(st, p, n)
      if n == 0 or (admission == NO and live) then
        return report(st, p, g, now, now_ns, n), nil
      end
      -- Allowed, or a tenant the budget does not remember yet, which joins even
      -- when rejected (so its share counts from its first call).
      local own_tat = member and member.tat or 0
      if admission ~= NO then
        g.tat = add(nmax(g.tat, now_ns), mul(n, p.interval))
      end
      if admission == OWN then
        -- A call with no debt passes however large: the TAT stops at 2^128 - 1 ns.
        own_tat = nmin(add(add(now_ns, st.d), mul(n, st.own)), U128_MAX)
      end
      join(x, g, member, live, p, now, now_ns, own_tat)
      local after = standing(debt(g.tat), debt(own_tat), total, p)
      local d
      if admission == NO then
        d = report(after, p, g, now, now_ns, n)
      else
        d = refunded(report(after, p, g, now, now_ns, 0))
      end
      return d, x.write(key_expiry(p, now, d.reset))
    end,
  }
end

------------------------------------------------------------------------------
-- Calls
------------------------------------------------------------------------------

local function now_ms()
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end

local function fields(d)
  return { d.allowed and 1 or 0, d.limit, d.remaining, d.retry, d.reset }
end

local function arity(name)
  fail("ERR wrong number of arguments for '" .. name .. "' command")
end

-- A function without options (rl_acquire, rl_release) given more arguments than
-- it takes: an option among them is named (as the module's command does), else the
-- arity error.
local function no_options(name, command, args, n)
  if #args > n and OPTION_WORDS[args[n + 1]:upper()] then
    fail("ERR syntax error: " .. args[n + 1]:upper() .. " does not apply to " .. command .. ", which takes no options")
  end
  if #args ~= n then
    arity(name)
  end
end

-- Runs body() and turns a failure into an error reply (an unexpected Lua error
-- too: it is reported, never raised).
local function guarded(name, body)
  local ok, result = pcall(body)
  if ok then
    return result
  end
  if type(result) == "table" and result.rl then
    return redis.error_reply(result.rl)
  end
  if type(result) == "table" and result.err then
    return redis.error_reply(result.err) -- a redis.call error (e.g. OOM, READONLY)
  end
  local detail = type(result) == "table" and result.internal or tostring(result)
  return redis.error_reply(
    "ERR internal error in " .. name .. "; nothing was changed (please report this): " .. tostring(detail)
  )
end

-- The function `name` of a one-key command with options: nparams parameters
-- after the key, read by limiter.params, then the options `row` says it takes
-- (row = {name = the command, debit, delay, usage = its FCALL line}; the map at
-- the end of build() gives it).
local function single(name, limiter, nparams, row)
  return function(keys, args)
    return guarded(name, function()
      if #keys ~= 1 then
        fail("ERR " .. name .. " takes exactly one key: " .. row.usage)
      end
      if #args < nparams then
        arity(name)
      end
      local params, i = limiter.params(args, 1)
      local amount = options(args, i, row)
      if limiter.calendar then
        params = limiter.calendar(params, args, i, true)
      end
      if amount.delay then
        params = limiter.delayed(params, amount.delay)
      end
      local d, write = limiter.decide(keys[1], params, now_ms(), amount)
      if write then
        write()
      end
      return fields(d)
    end)
  end
end

-- The function `name` of a one-key command without options: exactly nparams
-- arguments after the key, then body(key, args) (row = {name = the command,
-- usage = its FCALL line}).
local function exact(name, body, nparams, row)
  return function(keys, args)
    return guarded(name, function()
      if #keys ~= 1 then
        fail("ERR " .. name .. " takes exactly one key: " .. row.usage)
      end
      no_options(name, row.name, args, nparams)
      return body(keys[1], args)
    end)
  end
end

-- RL.ALL's policies: the word, the limiter, how many parameters follow the word,
-- the error naming them, whether it takes DEBIT, and whether it is only looked at
-- (watches).
-- <generated:policies>
local POLICIES = {
  { word = "FIXED", limiter = FIXED, n = 2, takes = "ERR syntax error: policy FIXED takes limit window", debit = true, shadow = true },
  { word = "SLIDING", limiter = SLIDING, n = 2, takes = "ERR syntax error: policy SLIDING takes limit window", shadow = true },
  { word = "BUCKET", limiter = BUCKET, n = 3, takes = "ERR syntax error: policy BUCKET takes capacity tokens period", debit = true, shadow = true },
  { word = "GCRA", limiter = GCRA, n = 3, takes = "ERR syntax error: policy GCRA takes capacity tokens period", debit = true, delay = true, shadow = true },
  { word = "SLIDINGCOUNTER", limiter = SLIDINGCOUNTER, n = 2, takes = "ERR syntax error: policy SLIDINGCOUNTER takes limit window", debit = true, shadow = true },
  { word = "ACQUIRE", limiter = ACQUIRE, n = 3, takes = "ERR syntax error: policy ACQUIRE takes limit ttl id", refund = false },
  { word = "PENALTY", limiter = PENALTY, n = 4, takes = "ERR syntax error: policy PENALTY takes strikes window block max", refund = false, shadow = true, watches = true },
  { word = "SHARE", limiter = SHARE, n = 5, takes = "ERR syntax error: policy SHARE takes tenant weight capacity tokens period", debit = true, shadow = true },
  { word = "QUOTA", limiter = QUOTA, n = 2, takes = "ERR syntax error: policy QUOTA takes limit unit", debit = true, shadow = true },
}
-- </generated:policies>

-- COST, REFUND, DEBIT or DELAY: an option of the call (or of a GCRA policy), not
-- of a QUOTA policy's calendar.
local function amount_or_delay(word)
  local upper = word:upper()
  return OPTION_WORDS[upper] and not CALENDAR_WORDS[upper]
end

local function policy_of(word)
  local upper = word:upper()
  for _, p in ipairs(POLICIES) do
    if p.word == upper then
      return p
    end
  end
  return nil
end

-- allowed: whether the call writes. Only the enforced policies (every policy when
-- all are SHADOW) describe the call: limit, remaining (the smallest) and reset (the
-- longest) come from their limits, not from watched policies (PENALTY), unless all
-- are. Allowed: the longest wait of a scheduled enforced key (GCRA with DELAY), else
-- 0. Rejected: -1 if an enforced key never allows, else the longest wait of a
-- rejecting enforced key.
local function combine(per_key, policies, allowed)
  local all_shadow = true
  for _, p in ipairs(policies) do
    all_shadow = all_shadow and p.shadow
  end
  local limits = false
  for _, p in ipairs(policies) do
    if all_shadow or not p.shadow then
      limits = limits or not p.watches
    end
  end
  local reset = 0
  local tightest
  for k, d in ipairs(per_key) do
    local p = policies[k]
    if (all_shadow or not p.shadow) and not (limits and p.watches) then
      if tightest == nil or d.remaining < tightest.remaining then
        tightest = d
      end
      if d.reset > reset then
        reset = d.reset
      end
    end
  end
  local never, longest = false, 0
  for k, d in ipairs(per_key) do
    if d.allowed == allowed and not policies[k].shadow then
      if d.retry == -1 then
        never = true
      elseif d.retry > longest then
        longest = d.retry
      end
    end
  end
  local retry = never and -1 or longest
  return { allowed = allowed, limit = tightest.limit, remaining = tightest.remaining, retry = retry, reset = reset }
end

-- How many policies list[from..] starts with, by their names and parameter counts
-- (a GCRA's DELAY included), if only options or nothing follow them; else nil.
local function policies_in(list, from)
  local count, i = 0, from
  while list[i] ~= nil do
    if list[i]:upper() == "SHADOW" then
      i = i + 1
    end
    local p = list[i] and policy_of(list[i])
    if not p then
      break
    end
    i = i + 1 + p.n
    if p.limiter.delayed and list[i] ~= nil and list[i]:upper() == "DELAY" then
      i = i + 2
    end
    if i > #list + 1 then
      return nil
    end
    count = count + 1
  end
  if list[i] == nil or amount_or_delay(list[i]) then
    return count
  end
  return nil
end

-- The smallest numkeys other than #keys under which the keys and arguments read
-- as that many keys, then as many policies, then nothing or options; else nil.
local function fitting_numkeys(keys, args)
  local all = {}
  for _, k in ipairs(keys) do
    all[#all + 1] = k
  end
  for _, a in ipairs(args) do
    all[#all + 1] = a
  end
  for k = 1, math.min(#all, MAX_KEYS) do
    if k ~= #keys and policies_in(all, k + 1) == k then
      return k
    end
  end
  return nil
end

local function rl_all(keys, args)
  return guarded("rl_all", function()
    if 2 + #keys + #args < 6 then
      arity("rl_all")
    end
    if #keys < 1 or #keys > MAX_KEYS then
      fail(ERRORS.numkeys)
    end
    for i = 2, #keys do
      for j = 1, i - 1 do
        if keys[i] == keys[j] then
          fail("ERR key '" .. printable(keys[i]) .. "' is given more than once")
        end
      end
    end
    local policies, i, delayed, last_delayed = {}, 1, false, false
    while args[i] ~= nil do
      -- SHADOW before a policy makes it advisory: it never vetoes the call.
      local shadow = args[i]:upper() == "SHADOW"
      if shadow then
        local after = args[i + 1]
        if after ~= nil and after:upper() == "SHADOW" then
          fail("ERR syntax error: SHADOW given more than once")
        elseif after == nil or not policy_of(after) then
          fail(ERRORS.shadow_without_policy)
        end
        i = i + 1
      end
      local p = policy_of(args[i])
      if not p then
        break
      end
      if #args < i + p.n then
        fail(p.takes)
      end
      local ok, params = pcall(p.limiter.params, args, i + 1)
      if not ok then
        -- A parameter missing: an option or the next policy was read in its place.
        for j = i + 1, i + p.n do
          if amount_or_delay(args[j]) or policy_of(args[j]) then
            fail(p.takes)
          end
        end
        error(params, 0)
      end
      i, last_delayed = i + 1 + p.n, false
      -- A QUOTA policy's calendar options follow its parameters.
      if p.limiter.calendar then
        params, i = p.limiter.calendar(params, args, i, false)
      end
      -- A GCRA policy's DELAY max follows its parameters.
      if p.limiter.delayed and args[i] ~= nil and args[i]:upper() == "DELAY" then
        if args[i + 1] == nil then
          fail("ERR syntax error: DELAY needs a value")
        end
        params = p.limiter.delayed(params, delay_arg("DELAY", args[i + 1]))
        if args[i + 2] ~= nil and args[i + 2]:upper() == "DELAY" then
          fail("ERR syntax error: DELAY given more than once")
        end
        i, delayed, last_delayed = i + 2, true, true
      end
      policies[#policies + 1] =
        { policy = p, limiter = p.limiter, params = params, watches = p.watches, shadow = shadow }
    end
    if #policies ~= #keys then
      local fits = fitting_numkeys(keys, args)
      if fits then
        fail("ERR numkeys is " .. #keys .. ", but the keys and policies given match numkeys " .. fits)
      end
      local word = args[i]
      if word ~= nil and #policies > 0 and word:upper() == "DELAY" then
        fail(ERRORS.delay_without_gcra)
      end
      local upper = word and word:upper()
      local at_option = word == nil or upper == "COST" or upper == "REFUND" or upper == "DEBIT"
      if word ~= nil and #policies < #keys and not at_option then
        fail(ERRORS.unknown_policy(printable(word)))
      end
      fail(
        "ERR one policy per key, in key order: numkeys is " .. #keys .. ", policies given " .. #policies
      )
    end
    -- The options after the last policy, in any order: COST n, REFUND n or DEBIT n, and
    -- that policy's DELAY max when it is GCRA.
    local last = policies[#policies]
    local amount = options(args, i, { name = "RL.ALL", delay = last.limiter.delayed ~= nil, debit = true }, true)
    if amount.delay then
      if last_delayed then
        fail("ERR syntax error: DELAY given more than once")
      end
      last.params = last.limiter.delayed(last.params, amount.delay)
      delayed = true
    end
    if delayed and amount.refund then
      fail("ERR syntax error: DELAY and REFUND exclude each other")
    elseif delayed and amount.debit then
      fail("ERR syntax error: DELAY and DEBIT exclude each other")
    elseif amount.debit then
      for _, p in ipairs(policies) do
        if not p.watches and not p.policy.debit then
          fail("ERR syntax error: DEBIT does not apply to " .. p.policy.word .. ", which takes " .. expected(p.policy))
        end
      end
    end
    -- A watched policy (PENALTY) is only looked at, as COST 0: strikes are recorded by
    -- rl_penalty itself. It rejects a charge while blocked; REFUND and DEBIT settle
    -- what was already taken, so they ignore it.
    local look = { refund = false, n = 0 }
    local charging = not amount.refund and not amount.debit
    local now = now_ms()
    local decisions, writes, all = {}, {}, true
    for k, key in ipairs(keys) do
      local p = policies[k]
      local d, write = p.limiter.decide(key, p.params, now, p.watches and look or amount)
      decisions[k], writes[k] = d, write
      all = all and (p.shadow or d.allowed or (p.watches == true and not charging))
    end
    if all then
      -- A SHADOW key is written only if it allows on its own.
      for k = 1, #keys do
        if writes[k] and (decisions[k].allowed or not policies[k].shadow) then
          writes[k]()
        end
      end
    else
      -- Each key answers its state as COST 0 reads it. A decision that writes
      -- nothing (a key that rejects, a watched key, COST 0) already reports it: only
      -- a key that would have written is looked at again.
      for k, key in ipairs(keys) do
        if writes[k] then
          local state = policies[k].limiter.decide(key, policies[k].params, now, { refund = false, n = 0 })
          decisions[k].remaining, decisions[k].reset = state.remaining, state.reset
        end
      end
    end
    local reply = { fields(combine(decisions, policies, all)) }
    for k = 1, #keys do
      reply[k + 1] = fields(decisions[k])
    end
    return reply
  end)
end

-- rl_acquire's body (exact checked the key and the arguments).
local function acquire(key, args)
  local p = lease_params(args, 1)
  local d, write = ACQUIRE.decide(key, p, now_ms(), { refund = false, n = 1 })
  if write then
    write()
  end
  return fields(d)
end

-- rl_release's body: ZREM + PEXPIREAT at the latest lease left, or DEL when no
-- live lease is left.
local function release(key, args)
  local id = lease_id(args[1])
  local now = now_ms()
  if not lease_load(key) or not live_end(key, now, id) then
    return 0
  end
  local other = latest_live(key, now, id)
  if other == nil then
    delete(key)
  else
    redis.call("ZREM", key, id)
    redis.call("PEXPIREAT", key, str(other))
  end
  return 1
end

-- Every function, by its name: a one-key command with options through single, one
-- without through exact, rl_all as written above.
-- <generated:functions>
return {
  rl_fixed = single("rl_fixed", FIXED, 2, {
    name = "RL.FIXED",
    debit = true,
    shadow = true,
    usage = "FCALL rl_fixed 1 key limit window [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_sliding = single("rl_sliding", SLIDING, 2, {
    name = "RL.SLIDING",
    shadow = true,
    usage = "FCALL rl_sliding 1 key limit window [COST n | REFUND n] [SHADOW]",
  }),
  rl_bucket = single("rl_bucket", BUCKET, 3, {
    name = "RL.BUCKET",
    debit = true,
    shadow = true,
    usage = "FCALL rl_bucket 1 key capacity tokens period [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_gcra = single("rl_gcra", GCRA, 3, {
    name = "RL.GCRA",
    debit = true,
    delay = true,
    shadow = true,
    usage = "FCALL rl_gcra 1 key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max] [SHADOW]",
  }),
  rl_slidingcounter = single("rl_slidingcounter", SLIDINGCOUNTER, 2, {
    name = "RL.SLIDINGCOUNTER",
    debit = true,
    shadow = true,
    usage = "FCALL rl_slidingcounter 1 key limit window [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_acquire = exact("rl_acquire", acquire, 3, {
    name = "RL.ACQUIRE",
    usage = "FCALL rl_acquire 1 key limit ttl id",
  }),
  rl_penalty = single("rl_penalty", PENALTY, 4, {
    name = "RL.PENALTY",
    refund = false,
    shadow = true,
    usage = "FCALL rl_penalty 1 key strikes window block max [COST n] [SHADOW]",
  }),
  rl_share = single("rl_share", SHARE, 5, {
    name = "RL.SHARE",
    debit = true,
    shadow = true,
    usage = "FCALL rl_share 1 key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_quota = single("rl_quota", QUOTA, 2, {
    name = "RL.QUOTA",
    debit = true,
    shadow = true,
    calendar = true,
    usage = "FCALL rl_quota 1 key limit unit [EVERY n] [ON anchor] [AT hh:mm] [TZ zone] [COST n | REFUND n | DEBIT n] [SHADOW]",
  }),
  rl_release = exact("rl_release", release, 1, {
    name = "RL.RELEASE",
    usage = "FCALL rl_release 1 key id",
  }),
  rl_all = rl_all,
}
-- </generated:functions>
end

-- The library's version, Cargo.toml's (a test checks they agree), as the header says.
local VERSION = "0.2.0"

local lib
local function register(name, flags)
  redis.register_function({
    function_name = name,
    callback = function(keys, args)
      lib = lib or build()
      return lib[name](keys, args)
    end,
    flags = flags,
  })
end
-- Every function of the map. A function whose command is not deny-oom is
-- allow-oom: like DEL, RL.RELEASE must work on a server at maxmemory, or a full
-- server could never free a slot.
-- <generated:register>
register("rl_fixed")
register("rl_sliding")
register("rl_bucket")
register("rl_gcra")
register("rl_slidingcounter")
register("rl_acquire")
register("rl_penalty")
register("rl_share")
register("rl_quota")
register("rl_release", { "allow-oom" })
register("rl_all")
-- </generated:register>
-- Which library is loaded: FCALL rl_version 0 (or FCALL_RO, on a replica too).
redis.register_function({
  function_name = "rl_version",
  callback = function()
    return VERSION
  end,
  flags = { "no-writes", "allow-stale" },
})
