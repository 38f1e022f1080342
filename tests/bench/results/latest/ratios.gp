set terminal pngcairo size 1500,900 font "sans,10" noenhanced
set output "ratios.png"
set multiplot layout 2,3 title "steerd benchmarks: figure / kernel default, paired per round (bar from 1 to the median; whiskers: min..max; red: 2% worse)"
set style fill solid 0.5 border -1
set boxwidth 0.6
set grid ytics
set xrange [-0.6:7.6]
unset key
set title "hackbench, 4 cgroups\nwall time ratio, lower is better"
set yrange [0.686758131814219:1.116583184704524]
set ylabel "ratio to kernel default"
plot "ratio-hb4cg.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "hackbench -g 4, 1 process\ntime ratio, lower is better"
set yrange [0.8180409339410579:1.1396362742648818]
set ylabel "ratio to kernel default"
plot "ratio-hb1p.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "perf bench messaging\ntotal time ratio, lower is better"
set yrange [0.6622177223593828:2.1299715029807516]
set ylabel "ratio to kernel default"
plot "ratio-msg.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "perf bench pipe\nusecs/op ratio, lower is better"
set yrange [0:1.5098665689445263]
set ylabel "ratio to kernel default"
plot "ratio-pipe.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "cyclictest + noise\np99 wakeup latency ratio, lower is better"
set yrange [0.4455976389572061:4.469109690113133]
set ylabel "ratio to kernel default"
plot "ratio-cyc.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
set title "tbench loopback\nthroughput ratio, higher is better"
set yrange [0.8918987836178999:1.1315918982256445]
set ylabel "ratio to kernel default"
plot "ratio-tbench.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 0.98 with lines lc rgb "red" dt 2
set title "the load moves between four cgroups\nwall time ratio, lower is better"
set yrange [0.8022301093985095:1.1324518558800072]
set ylabel "ratio to kernel default"
plot "ratio-phases.dat" using 0:(($3+1)/2):(0.3):(abs($3-1)/2) with boxxyerror lc rgb "#4a7ebb", "" using 0:3:2:4:xtic(1) with yerrorbars lc rgb "black" pt 7 ps 0.6, 1 with lines lc rgb "black" dt 1, 1.02 with lines lc rgb "red" dt 2
unset multiplot
