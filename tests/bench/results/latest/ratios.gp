set terminal pngcairo size 1500,900 font "sans,10" noenhanced
set output "ratios.png"
set multiplot layout 2,3 title "steerd benchmarks: figure / kernel default, paired per round (bar from 1 to the median; whiskers: min..max; red: 2% worse)"
set style fill solid 0.5 border -1
set boxwidth 0.6
set grid ytics
set xrange [-0.6:8.6]
unset key
set title "hackbench, 4 cgroups\nwall time ratio, lower is better"
set yrange [0.7319699902008819:1.0749604360607545]
set ylabel "ratio to kernel default"
plot "ratio-hb4cg.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "hackbench -g 4, 1 process\ntime ratio, lower is better"
set yrange [0.7884568778555501:1.247175472630365]
set ylabel "ratio to kernel default"
plot "ratio-hb1p.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "perf bench messaging\ntotal time ratio, lower is better"
set yrange [0.8306516477378515:2.1391863712530252]
set ylabel "ratio to kernel default"
plot "ratio-msg.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "perf bench pipe\nusecs/op ratio, lower is better"
set yrange [0:1.2600479045459843]
set ylabel "ratio to kernel default"
plot "ratio-pipe.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "a token ring of four threads\ntime ratio, lower is better"
set yrange [0.19385706254513127:1.35274646729199]
set ylabel "ratio to kernel default"
plot "ratio-ring.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "cyclictest + noise\np99 wakeup latency ratio, lower is better"
set yrange [0.5798761609907122:3.26656346749226]
set ylabel "ratio to kernel default"
plot "ratio-cyc.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "tbench loopback\nthroughput ratio, higher is better"
set yrange [0.9519867451656447:1.0614349537300567]
set ylabel "ratio to kernel default"
plot "ratio-tbench.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 0.98 with lines lc rgb "red" dt 2
set title "the load moves between four cgroups\nwall time ratio, lower is better"
set yrange [0.7544778218967971:1.3092613988575388]
set ylabel "ratio to kernel default"
plot "ratio-phases.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
unset multiplot
