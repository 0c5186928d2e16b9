(function(){
var root=document.documentElement,box=document.getElementById('filter');
function apply(){
 var q=box?box.value.toLowerCase():'';
 document.querySelectorAll('svg.forest').forEach(function(svg){
  var rh=+svg.getAttribute('data-row-height'),top=+svg.getAttribute('data-top'),i=0;
  svg.querySelectorAll('g.r').forEach(function(g){
   var show=g.getAttribute('data-name').toLowerCase().indexOf(q)>=0;
   g.style.display=show?'':'none';
   if(show){g.setAttribute('transform','translate(0,'+(top+i*rh)+')');i++;}
  });
  svg.setAttribute('height',top*2+Math.max(i,1)*rh);
 });
 document.querySelectorAll('[data-filter]').forEach(function(el){
  el.style.display=el.getAttribute('data-filter').toLowerCase().indexOf(q)>=0?'':'none';
 });
}
if(box)box.addEventListener('input',apply);
document.querySelectorAll('table.sortable').forEach(function(t){
 var heads=t.tHead.rows[0].cells;
 [].forEach.call(heads,function(th,i){
  th.addEventListener('click',function(){
   var dir=th.getAttribute('aria-sort')==='ascending'?-1:1,body=t.tBodies[0],rows=[].slice.call(body.rows);
   [].forEach.call(heads,function(h){h.removeAttribute('aria-sort');});
   th.setAttribute('aria-sort',dir>0?'ascending':'descending');
   function key(r){var c=r.cells[i],v=c?c.getAttribute('data-v'):null;return v===null?(c?c.textContent:''):parseFloat(v);}
   rows.sort(function(a,b){var x=key(a),y=key(b);
    if(typeof x==='number'){if(isNaN(x))return isNaN(y)?0:1;if(isNaN(y))return -1;return dir*(x-y);}
    return dir*String(x).localeCompare(String(y));});
   rows.forEach(function(r){body.appendChild(r);});
  });
 });
});
window.addEventListener('load',function(){root.setAttribute('data-ready','1');});
})();
