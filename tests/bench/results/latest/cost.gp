set terminal pngcairo size 1500,1000 font "sans,10" noenhanced
set output "cost.png"
set multiplot layout 2,2 title "steerd: cost per tick (fixture roots, 16-CPU LLCs, mode latency)"
set logscale xy
set grid
set key top left
set format y "%.0s%c"
set xrange [1.33333:1536]
set xlabel "CPUs (at 1,000 opted-in threads)"
set ylabel "instructions per tick (callgrind)"
set title "instructions"
plot "cost-cpus.dat" using 1:2 with linespoints pt 7 lw 2 title "whole tick (daemon)", "" using 1:3 with linespoints pt 5 title "sampler", "" using 1:4 with linespoints pt 9 title "policy, idle fixture", "" using 1:5 with linespoints pt 11 title "policy, busy stream (replay)"
set ylabel "microseconds per tick"
set title "time (plain run, uprobes on on_tick)"
plot "cost-cpus.dat" using 1:6 with linespoints pt 7 lw 2 title "wall, median tick", "" using 1:7 with linespoints pt 5 title "CPU time / ticks", 2000 with lines dt 2 lc rgb "red" title "target: 2 ms"
set xrange [66.6667:75000]
set xlabel "opted-in threads (at 1,024 CPUs)"
set ylabel "instructions per tick (callgrind)"
set title "instructions"
plot "cost-threads.dat" using 1:2 with linespoints pt 7 lw 2 title "whole tick (daemon)", "" using 1:3 with linespoints pt 5 title "sampler", "" using 1:4 with linespoints pt 9 title "policy, idle fixture", "" using 1:5 with linespoints pt 11 title "policy, busy stream (replay)"
set ylabel "microseconds per tick"
set title "time (plain run, uprobes on on_tick)"
plot "cost-threads.dat" using 1:6 with linespoints pt 7 lw 2 title "wall, median tick", "" using 1:7 with linespoints pt 5 title "CPU time / ticks", 2000 with lines dt 2 lc rgb "red" title "target: 2 ms"
unset multiplot
